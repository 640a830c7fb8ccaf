"""Settings, read once from the environment and `.env` when the app is built.

Nothing reads the environment anywhere else: `create_app(settings)` receives
this object, so tests build apps with their own settings side by side.
Secrets are `SecretStr` so they never print in a repr, a log or an error.

`Settings` is composed of one class per section (storage, the language model,
limits, ...): each field's docstring is the setting's one description, from
which `scripts/references.py` writes the settings reference and `.env.example`.

A layer takes the few settings it reads as a small frozen dataclass, a
`SettingsPart`: its fields are read from the same-named settings (after a
prefix, or renamed), by one rule, and have no defaults of their own, so each
default is declared once, here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, dataclass_transform
from urllib.parse import urlsplit

from dotenv import dotenv_values
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

Provider = Literal[
    "openai", "anthropic", "gemini", "dashscope", "deepseek", "glm", "qwen", "vllm", "ollama"
]
"""The adapters, then OpenAI-compatible servers preset with their endpoint (app/llm/registry.py)."""
DisconnectPolicy = Literal["continue", "cancel"]
ShellMode = Literal["sandboxed", "unsandboxed"]


HASHED_KEY = "sha256:"
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")


def key_digest(key: str) -> str:
    """How API keys are held and compared: the SHA-256 of the key, in hex."""
    return hashlib.sha256(key.encode()).hexdigest()


ONLY_WHEN_GIVEN: dict[str, JsonValue] = {"onlyWhenGiven": True}
"""Marks a setting (`json_schema_extra`) whose being given at all changes what the service
does, since unset it falls back to something other than its declared default:
`.env.example` shows it commented out, so copying the file changes nothing."""


class SettingsSection(BaseModel):
    """A group of settings: its docstring's first line is the group's title, the rest its
    introduction; each field's docstring is the setting's one description. The settings
    reference (docs/operate/settings.md) and `.env.example` are generated from them by
    `scripts/references.py`."""

    model_config = ConfigDict(use_attribute_docstrings=True)


class StorageSection(SettingsSection):
    """Storage

    Where conversations, turns and files are kept. The embedded default is a SQLite file
    and files under `./data`; production uses PostgreSQL.
    """

    database_url: str = "sqlite+aiosqlite:///./data/app.db"
    """Any SQLAlchemy async URL. Production: `postgresql+asyncpg://user:password@host:5432/dbname`
    (the pooler's address when there is one)."""
    auto_migrate: bool = True
    """Apply Alembic migrations at start-up; `false` where deployments run
    `alembic upgrade head` as a step of their own."""
    migrate_database_url: str = ""
    """Where migrations run (`alembic upgrade head`, and the start-up's with `AUTO_MIGRATE`):
    the database's own address when `DATABASE_URL` is a pooler's (PgBouncer); empty:
    `DATABASE_URL`."""
    db_pool_size: int = 20
    """PostgreSQL connections per instance, per pool: SQLAlchemy's pool (up to twice this,
    opened as needed) plus the turns' own asyncpg pool of this size, which opens all its
    connections just after start-up and keeps them. Count both against the server's
    `max_connections`."""
    db_transaction_pooler: bool = False
    """`DATABASE_URL` is a pooler in transaction mode (PgBouncer's `pool_mode = transaction`):
    no prepared statement or session state outlives a transaction. Migrations then run on a
    direct connection: `MIGRATE_DATABASE_URL`, or a deploy step with `AUTO_MIGRATE=false`
    (docs/operate/scaling.md)."""
    data_dir: Path = Path("./data")
    """Uploads and generated files (`files/`), the skills agent's workspaces (`workspaces/`)
    and tiktoken's encoding files (`tiktoken/`). Several instances mount one shared volume
    here."""


class TasksSection(SettingsSection):
    """Tasks across instances

    Who runs which conversation, stopping, resuming and crash recovery. Without Redis the
    task registry lives in the process (a single instance); several instances share one
    Redis.
    """

    redis_url: str = ""
    """`redis://host:6379/0`: stop, TTL, resume, queues, `/agent/runs` and the per-user
    limits across instances. Empty: the in-process task registry (one instance only). One
    server; for a primary that Sentinels fail over, or a Cluster, see `REDIS_SENTINELS` and
    `REDIS_CLUSTER`."""
    redis_prefix: str = "dodo:"
    """Prefix of every Redis key and channel, so several deployments can share one Redis."""
    redis_sentinels: str = ""
    """`host:port,host:port` of Redis Sentinels: the primary is asked of them, and found
    again after they fail it over (with `REDIS_SENTINEL_MASTER`). `REDIS_URL` then gives
    only the password, the database and the scheme (`rediss://` for TLS); its host is not
    used (docs/operate/redis.md)."""
    redis_sentinel_master: str = ""
    """The name the Sentinels monitor the primary under (`sentinel monitor <name> ...`)."""
    redis_cluster: bool = False
    """`REDIS_URL` names a node of a Redis Cluster (database 0): the others are found from
    it, and keys carry a hash tag per user, so they spread over the nodes
    (docs/operate/redis.md)."""
    task_ttl_seconds: int = Field(default=1800, ge=1)
    """Longest a task may hold its conversation without a heartbeat refresh: the backstop
    (with Redis a dead instance is noticed far sooner, see `INSTANCE_DEAD_SECONDS`)."""
    instance_dead_seconds: float = Field(default=15.0, gt=0)
    """With Redis: an instance silent this long after its last heartbeat (it beats five
    times in this span) is dead; another takes its running turns over (`TURN_TAKEOVERS`)
    or marks them `interrupted` and frees their conversations."""
    turn_takeovers: int = Field(default=2, ge=0)
    """With Redis: how many times a running turn may move to another instance (its own died,
    or drained on a deploy) and be carried on from its last durable point; past that it ends
    `interrupted`. 0: never (every such turn ends `interrupted`)."""
    drain_seconds: float = Field(default=20.0, ge=0)
    """On SIGTERM: how long running turns get to finish while `/ready` answers 503 and new
    turns are refused (503 `DRAINING`); those still running are then handed to another
    instance (or, alone, stored `interrupted`). Keep it below the orchestrator's grace period
    (Kubernetes: 30 s) less a few seconds for the hand-over."""
    resume_retention_seconds: int = 300
    """How long a finished run's events stay readable by `/agent/resume`."""
    resume_max_events: int = Field(default=10000, ge=1)
    """Events of one run kept in its Redis Stream for resuming on other instances (older
    ones are trimmed)."""
    partial_save_seconds: float = Field(default=5.0, gt=0)
    """How often a running turn's answer so far is stored, so a crash loses at most this
    much."""
    store_retry_seconds: float = Field(default=120.0, gt=0)
    """How long a turn's final store retries an unreachable database (a restart, a failover)
    before the turn ends `error{STORE_FAILED}` + `complete{failed}`; the stream waits
    meanwhile, saying it is saving."""
    unstored_sweep_seconds: float = Field(default=30.0, gt=0)
    """How often each instance stores the turns whose own final store gave up (their
    outcomes kept in Redis meanwhile), once the database answers again. Needs `REDIS_URL`."""


class LanguageModelSection(SettingsSection):
    """Language model

    The model every turn uses unless `MODELS` offers others (docs/operate/models.md).
    Switching vendor is a matter of `LLM_PROVIDER` and its key.
    """

    llm_provider: Provider = "openai"
    """The adapter: `openai` (any OpenAI-compatible endpoint), `anthropic`, `gemini`,
    `dashscope` (the native Qwen API); or a preset of the OpenAI-compatible adapter with its
    endpoint filled in: `deepseek`, `glm`, `qwen` (DashScope's compatible mode), `vllm`,
    `ollama` (these two need no key, but a `LLM_MODEL`). Each one's endpoint and model:
    docs/operate/models.md."""
    llm_base_url: str = ""
    """The provider's endpoint; empty: the provider's default once a key is set (a local
    preset's at once). Any other OpenAI-compatible server: `LLM_PROVIDER=openai` and its URL
    here, with its `/v1`."""
    llm_api_key: SecretStr = SecretStr("")
    """The provider's API key (empty for local servers). Sent only in the vendor's auth
    header, never in a URL, a log line, an event or an error."""
    llm_model: str = ""
    """The model name; empty: the provider's default (`gpt-4o-mini`, `claude-sonnet-4-5`,
    `gemini-2.5-flash`, `qwen-plus`, `deepseek-chat`, `glm-4.6`); `vllm` and `ollama` need
    one."""
    llm_timeout_seconds: float = Field(default=60.0, json_schema_extra=ONLY_WHEN_GIVEN)
    """Longest wait for the first chunk, and between two chunks, of a model stream.

    Only when given (environment, `.env`) does it replace the provider's own default: 60 s,
    or 300 s for local servers (`vllm`, `ollama`), which may load the model first."""
    llm_connect_timeout_seconds: float = 10.0
    """Longest wait for a connection to the provider."""
    llm_max_response_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """Most bytes one model call's streamed answer may take (an answer that never ends, or
    one huge chunk); beyond, the turn ends with an error and the partial answer is kept."""
    llm_max_retries: int = 3
    """Retries of a failed call before its first chunk (a 429 honours `Retry-After`; 5xx,
    overloads and network errors are retried too)."""
    llm_retry_max_delay_seconds: float = 20.0
    """Longest wait between two retries."""
    llm_max_connections: int = 1000
    """Pooled connections to the provider: at least the number of concurrent streams to
    hold."""
    llm_temperature: float | None = None
    """Default sampling temperature, mapped to each provider's name; empty: the provider's."""
    llm_max_tokens: int | None = None
    """Default cap on an answer's tokens, mapped to each provider's name; empty: the
    provider's."""
    llm_top_p: float | None = None
    """Default nucleus sampling, mapped to each provider's name; empty: the provider's."""
    llm_thinking_budget: int | None = Field(default=None, ge=0)
    """Tokens the model may reason with before answering: Anthropic (extended thinking),
    Gemini (thinking budget) and DashScope (`enable_thinking`). 0: no reasoning; empty: the
    provider's default."""
    llm_structured_output: Literal["native", "prompt"] = "native"
    """How the steps that need JSON (deep research's clarify, plan and critique, the deck's
    steps, follow-up questions) ask for it: `native`, the provider's structured output,
    falling back to the prompt for a server that refuses it; `prompt`, the JSON-in-the-prompt
    form only (docs/operate/models.md)."""


class ModelsSection(SettingsSection):
    """Models

    More named models beside the `LLM_*` one, and which agent uses which
    (docs/operate/models.md).
    """

    models: SecretStr = SecretStr("")
    """Named models beside the `LLM_*` one (which is the model `default` unless this names
    one): a JSON list, inline, or `@path/to/models.json|yaml`. Each entry: `id`, `label`,
    `provider`, `baseUrl`, `apiKey` or `apiKeyEnv`, `model`, `contextWindow`, `vision`,
    `inputPricePerMTok`, `outputPricePerMTok`, and optionally `timeoutSeconds`,
    `maxRetries`, `structuredOutput`, `maxConnections`. A mistake (an unknown provider, an
    `apiKeyEnv` not set, a duplicate id) stops the service at start-up, naming the entry.
    Secret: an entry may hold its key inline."""
    agent_models: str = ""
    """Each agent kind's model when a turn names none: `kind:modelId`, comma-separated
    (`deep:strong,pptx:fast`); kinds not named: `default`."""
    deep_task_model: str = ""
    """The model id of deep research's task runs; empty: the turn's model."""
    deep_report_model: str = ""
    """The model id that writes deep research's report; empty: the turn's model."""


class WebSearchSection(SettingsSection):
    """Web search"""

    tavily_api_key: SecretStr = SecretStr("")
    """Tavily's API key; without it the web-search agent answers from the model alone."""
    tavily_base_url: str = "https://api.tavily.com"
    """Tavily's endpoint."""
    tavily_max_results: int = 5
    """Results per search (Tavily's, or an MCP search tool's)."""
    web_search_provider: str = Field(
        default="tavily", pattern=r"^(tavily|mcp:[A-Za-z][A-Za-z0-9-]{0,29}(/[^/\s]+)?)$"
    )
    """Where web search comes from: `tavily` (its HTTP API), or `mcp:<server>` (or
    `mcp:<server>/<tool>`): a search tool of a server in `MCP_SERVERS`, such as Tavily's MCP
    server."""


class McpSection(SettingsSection):
    """MCP tools

    Servers whose tools the agents get (docs/integrate/mcp.md).
    """

    mcp_servers: SecretStr = SecretStr("")
    """MCP servers whose tools the agents get, as JSON or the path of a JSON file: a list of
    `{name, command, args, env}` (stdio) or `{name, url, headers}` (streamable HTTP), each
    with `agents` (the kinds that get its tools; default `["chat"]`). The
    `{"mcpServers": {...}}` file other MCP hosts use works too. Tools are named
    `<name>__<tool>`."""
    mcp_call_timeout_seconds: float = Field(default=60.0, gt=0)
    """Longest one MCP tool call may take; past it the model reads a tool error."""
    mcp_connect_timeout_seconds: float = Field(default=20.0, gt=0)
    """Longest a server may take to start and list its tools; start-up waits this long."""
    mcp_result_max_chars: int = Field(default=20000, ge=100)
    """Most of one MCP tool result the model is given; the rest is cut."""
    mcp_health_seconds: float = Field(default=30.0, gt=0)
    """How often a connected server is checked (its tool list read again)."""
    mcp_reconnect_min_seconds: float = Field(default=1.0, gt=0)
    """First wait before a server that is down is tried again; it doubles after each
    failure, up to `MCP_RECONNECT_MAX_SECONDS`."""
    mcp_reconnect_max_seconds: float = Field(default=60.0, gt=0)
    """Longest wait between two tries of a server that is down."""


class OutboundSection(SettingsSection):
    """Outbound requests

    URLs that a model, a user or a document chose (page fetches, deck pictures, webhooks,
    MCP and A2A servers) go through the outbound guard: only the public internet, within
    these bounds (docs/operate/security.md).
    """

    outbound_allowlist: str = ""
    """Hosts, addresses or CIDR ranges (comma-separated) that a chosen URL may reach though
    they are not public; loopback, private, link-local and metadata addresses are refused
    otherwise."""
    outbound_max_bytes: int = Field(default=5 * 1024 * 1024, ge=1)
    """Most of one fetched page or picture that is read; the rest is cut."""
    outbound_timeout_seconds: float = Field(default=20.0, gt=0)
    """Longest one fetch of a chosen URL may take, redirects included."""


class FetchSection(SettingsSection):
    """Reading pages

    The `fetch_page` tool of the web-search, deep research, skills and host agents
    (docs/use/reading.md), through the outbound guard above.
    """

    fetch_enabled: bool = True
    """Offer `fetch_page` (read a web page) to the web-search, deep, skills and host agents;
    `false`: no agent reads pages, and deep research reads snippets only."""
    fetch_max_chars: int = Field(default=20000, ge=500)
    """Most of a read page's text the model is given; the rest is cut, and said so."""
    fetch_respect_robots: bool = True
    """Read only pages a site's robots.txt lets our User-Agent read."""
    fetch_user_agent: str = "dodo-agent/0.1 (an AI assistant reading a page it cites)"
    """Sent with every page and robots.txt fetch; its first word is our name in robots.txt."""
    fetch_cache_seconds: float = Field(default=600.0, ge=0)
    """How long a read page (and a site's robots.txt) is kept: in Redis when `REDIS_URL` is
    set (shared by every instance), else in the process; 0: not kept."""
    fetch_per_host: int = Field(default=2, ge=1)
    """Pages of one host read at the same time by one instance; more wait their turn."""
    fetch_max_parallel: int = Field(default=16, ge=1)
    """Pages read at the same time by one instance, all hosts together."""


class WebhookSection(SettingsSection):
    """Webhooks

    A signed POST once a turn ends (docs/integrate/webhooks.md).
    """

    webhook_url: str = ""
    """Called once when any turn ends, unless its request names its own `webhook`; through
    the outbound guard (a receiver on this host needs 127.0.0.1 in `OUTBOUND_ALLOWLIST`).
    Empty: none."""
    webhook_secret: SecretStr = SecretStr("")
    """Key of the HMAC-SHA256 signature (`X-Webhook-Signature`) on every webhook call and
    A2A push notification; empty: both are off (a request naming a `webhook` answers 400)."""
    webhook_max_attempts: int = Field(default=5, ge=1)
    """Tries of one webhook call before it is given up (logged)."""
    webhook_retry_seconds: float = Field(default=1.0, gt=0)
    """Wait before the second try; it doubles after each failure."""
    webhook_timeout_seconds: float = Field(default=10.0, gt=0)
    """Longest one try may take."""


class A2aSection(SettingsSection):
    """A2A

    Our agents to other agents, and other agents to ours (docs/integrate/a2a.md).
    """

    a2a_agents: SecretStr = SecretStr("")
    """Remote A2A agents the host agent (`/agent/host/stream`) delegates to: base URLs, each
    optionally with its key after a `|`, comma-separated
    (`https://research.example.com|sk-remote,http://10.0.0.5:8888`)."""
    a2a_refresh_seconds: float = Field(default=300.0, gt=0)
    """How often the remote agents' cards are read again (an unreachable one is left out
    until then)."""
    a2a_timeout_seconds: float = Field(default=300.0, gt=0)
    """Longest silence of a remote agent's stream before the call counts as failed."""
    a2a_public_url: str = ""
    """Our base URL as other agents reach it, written into our agent card and A2A artifacts'
    links; empty: the URL the card was asked on (set it behind a proxy that rewrites the
    host)."""


class AccessSection(SettingsSection):
    """Access

    Who may call the service, and from which browser origins (docs/operate/sign-in.md).
    With none of `API_KEYS`, `OIDC_ISSUER` and `AUTH_TRUSTED_HEADER` set there is no
    sign-in: everyone is the one local user.
    """

    api_keys: SecretStr = SecretStr("")
    """`key:user` pairs, comma-separated: `key1:alice,key2:bob` (clients send
    `Authorization: Bearer key1`). A key may be given as its SHA-256 instead, so the
    configuration need not hold it: `sha256:<hex>:carol`, the hex from
    `printf %s the-key | sha256sum`. Users may also make their own keys once any sign-in is
    on."""
    oidc_issuer: str = ""
    """An OpenID Connect issuer (`https://id.example.com/realms/team`): its access tokens are
    accepted as bearer tokens; its discovery document and keys are read through the outbound
    guard, so an intranet provider must be in `OUTBOUND_ALLOWLIST`."""
    oidc_audience: str = ""
    """The `aud` a token must carry; empty: `OIDC_CLIENT_ID`."""
    oidc_client_id: str = ""
    """The chat page's public client at the issuer (standard flow, PKCE, no secret); set, the
    page signs users in."""
    oidc_scopes: str = "openid profile email"
    """Scopes the chat page asks for."""
    oidc_user_claim: str = "sub"
    """The claim that names the user (`sub`, `preferred_username`, `email`)."""
    oidc_groups_claim: str = "groups"
    """The claim listing the user's groups, matched by `ADMIN_USERS`' `group:<name>`."""
    oidc_jwks_refresh_seconds: float = Field(default=60.0, ge=0)
    """Least time between two reads of the provider's keys caused by tokens naming an
    unknown `kid`."""
    auth_trusted_header: str = ""
    """A header a sign-in proxy (oauth2-proxy, Authelia, Cloudflare Access) names the user in
    (`X-Forwarded-User`); empty: none."""
    auth_trusted_proxies: str = ""
    """The sign-in proxies' addresses, as CIDRs: the trusted header is believed from these
    only; from anywhere else it is ignored (and logged once)."""
    auth_trusted_groups_header: str = ""
    """A header the sign-in proxy lists the user's groups in, comma-separated (oauth2-proxy's
    `X-Forwarded-Groups`, Authelia's `Remote-Groups`), for `ADMIN_USERS`' `group:<name>`;
    believed only beside the user's header from those proxies; empty: none."""
    admin_users: str = ""
    """Users who may see and stop anyone's runs, read usage per user and set a user's limits
    (`/admin/...`): user ids, or `group:<name>` for members of a group (the OIDC groups
    claim, or the sign-in proxy's groups header); comma-separated."""
    cors_origins: str = "*"
    """Origins a browser may call the API from, comma-separated
    (`https://chat.example.com,http://localhost:5173`). `*` allows any origin, but only
    without authentication: with it on, `*` allows no other origin (the service's own page
    at `/` always works), so list the front ends' origins."""


class LimitsSection(SettingsSection):
    """Limits

    What one request, one user and one instance may cost (docs/operate/limits.md). The
    per-user limits are counted in Redis when `REDIS_URL` is set, so they hold across
    instances; without authentication they count per client address (behind a proxy:
    uvicorn's `FORWARDED_ALLOW_IPS`). 0 turns a per-user limit off, at no cost; a load test
    from one address sets them to 0, and an admin may set one user's at run time
    (`PUT /admin/users/{id}/limits`).
    """

    query_max_chars: int = Field(default=32000, ge=1)
    """Longest accepted `query`, in characters (longer answers 413). Query strings and JSON
    bodies are capped from it too: 12 bytes a character + 16 KiB (414, 413)."""
    upload_max_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    """Largest accepted upload (larger answers 413, refused as the body arrives)."""
    request_headers_max_bytes: int = Field(default=32 * 1024, ge=1024)
    """Largest total size of one request's headers; larger answers 431."""
    request_head_timeout_seconds: float = Field(default=10.0, gt=0)
    """Longest a request's head (request line and headers) may take to arrive, from the
    connection's start or the previous answer; then the connection is closed. Needs the
    server started with `--http app.api.head_timeout:HeadTimeoutProtocol` (`scripts/run` and
    the Dockerfile do)."""
    request_body_timeout_seconds: float = Field(default=30.0, gt=0)
    """Longest a request's body (but an upload's) may take to arrive whole; then 408 and the
    connection is closed."""
    upload_body_timeout_seconds: float = Field(default=300.0, gt=0)
    """Longest an upload's body may take to arrive whole; then 408."""
    max_streams_per_user: int = Field(default=8, ge=0)
    """Streams (running turns) one user may have at once; more answer 429 with
    `Retry-After: 5`. 0: no limit."""
    streams_per_minute: int = Field(default=30, ge=0)
    """New streams per user and minute, a token bucket (a minute's worth may come at once);
    more answer 429 with `Retry-After`. 0: no limit."""
    uploads_per_minute: int = Field(default=20, ge=0)
    """Uploads per user and minute, a token bucket, checked before the body is read; more
    answer 429 with `Retry-After`. 0: no limit."""
    max_starting_turns: int = Field(default=24, ge=1)
    """New turns storing their question at once, per instance (all users together): a burst
    beyond it waits its turn to start, so the streams already running keep flowing."""


class TurnsSection(SettingsSection):
    """Turns and streams

    How every agent's turn runs and streams.
    """

    sse_ping_seconds: float = Field(default=15.0, gt=0)
    """Seconds between `: ping` comments on a silent stream, so proxies keep the connection."""
    on_disconnect: DisconnectPolicy = "continue"
    """What happens to a run whose client went away: `continue` (the answer is still
    stored, and `/agent/resume` rejoins it) or `cancel` (stopped as a stop would); a
    request's `onDisconnect` wins."""
    memory_max_turns: int = 10
    """Earlier turns of the conversation's active path sent to the model as memory, at
    most."""
    memory_max_tokens: int = 6000
    """Tokens that memory is cut to (within half the model's context window where the
    catalog gives one)."""
    react_max_rounds: int = 5
    """Tool rounds of a ReAct agent (web search, file, host) before a last answer without
    tools."""
    tool_approval: str = ""
    """Tools that wait for the user's yes before they run: `bash,write_file,edit_file`,
    `mcp:*` or `mcp:<server>`, `*` (every tool); empty: only MCP tools their server marks
    `destructiveHint`. A stream's `toolApproval=ask` asks for every acting tool of that turn,
    `=auto` for none not named here (docs/integrate/approvals.md)."""
    recommendations_enabled: bool = True
    """Ask the model for three follow-up questions after each answer (the `recommend`
    event)."""
    tool_result_display_chars: int = 2000
    """Characters of a tool result shown in a `tool_end` event (the model gets all of it)."""


class MemorySection(SettingsSection):
    """Memory

    What the agents keep of each user across conversations: short facts and preferences in
    the user's words, which the user sees and edits (`/memory`, docs/use/memory.md). Each
    turn reads the items most relevant to its question (ranked like documents' passages,
    no model call); a turn's `memory: "off"` and the user's own switch turn it off for a
    turn or for them. Not the conversation's own history (`MEMORY_MAX_TURNS`).
    """

    memory_enabled: bool = True
    """Keep users' memory: off, no turn reads or writes it, the agents get no `remember`
    tool, and `/memory` answers 404 (the page hides its Memory screen and temporary-chat
    switch). The items already kept stay in the database."""
    memory_tokens: int = Field(default=500, ge=0)
    """Tokens of a turn's system prompt given to the user's memory items, the most relevant
    to the question first; items past it are not shown to that turn."""
    memory_max_items: int = Field(default=200, ge=1)
    """Memory items one user may keep (general and in projects together); one more answers
    409, and the `remember` tool tells the model the memory is full."""


class SchedulesSection(SettingsSection):
    """Schedules

    Scheduled runs (`/schedules`, docs/operate/schedules.md): each instance runs a clock that
    claims what is due in the database (one row per schedule and due time, so each due time
    runs once across every instance) and starts it as an ordinary turn of the schedule's
    owner, counted against the owner's limits.
    """

    schedules_per_user: int = Field(default=20, ge=0)
    """Schedules one user may have; one more answers 400 with the reason. 0: no limit."""
    schedule_min_seconds: float = Field(default=900.0, ge=0)
    """Shortest time a schedule may leave between two runs, over its next few dozen due
    times; a recurrence with a shorter gap answers 400 with the reason."""
    schedule_max_failures: int = Field(default=3, ge=0)
    """Failed runs in a row after which a schedule pauses itself and says why
    (`pausedReason`); 0: never."""
    schedule_catch_up: Literal["one", "none"] = "one"
    """Due times missed while no instance ran: `one` run (the latest of them), or `none` (a
    due time later than a minute, or three `SCHEDULE_POLL_SECONDS`, is passed over)."""
    schedule_poll_seconds: float = Field(default=10.0, gt=0)
    """Longest each instance's schedule clock sleeps: it wakes sooner at a due time it knows
    of, and at once for a schedule made or changed on it; a schedule made on another
    instance is seen within this."""


class DeepResearchSection(SettingsSection):
    """Deep research

    The plan, parallel tasks, critique and report of `/agent/deep/stream`
    (docs/use/deep-research.md).
    """

    deep_max_parallel: int = Field(default=3, ge=1)
    """Tasks of a plan that run at the same time."""
    deep_max_rounds: int = Field(default=3, ge=1)
    """Plan -> tasks -> critique rounds before the report is written anyway."""
    deep_task_max_rounds: int = Field(default=5, ge=1)
    """Search-and-reason rounds of one task before it must answer."""
    deep_fetch_per_task: int = Field(default=3, ge=0)
    """Search results one task reads whole (the best passage of each is what it cites); 0:
    tasks read snippets only (they may still call `fetch_page`)."""
    deep_fetch_parallel: int = Field(default=4, ge=1)
    """Pages one research turn reads at the same time, all its tasks together."""
    deep_report_formats: str = Field(
        default="docx,pdf", pattern=r"^\s*(none|((docx|pdf)\s*(,\s*|$))*)\s*$"
    )
    """Files each finished report is also given as: `docx`, `pdf` (made by LibreOffice from
    the docx) or both, comma-separated; `none` (an empty value keeps the default): none.
    Without LibreOffice the PDF's `file` event is `failed` with the reason, and the docx
    still comes."""


class DocumentsSection(SettingsSection):
    """Documents

    Uploads: how they are read, cut into passages and searched (the file agent, and every
    agent a file is attached to). Beyond any reading budget a document is kept as `failed`
    with the reason.
    """

    embedding_base_url: str = ""
    """An OpenAI-compatible `/embeddings` endpoint for hybrid (BM25 + vector) document search
    (`https://api.openai.com/v1`, `http://localhost:11434/v1`); empty: BM25 alone."""
    embedding_api_key: SecretStr = SecretStr("")
    """The embeddings endpoint's key."""
    embedding_model: str = "text-embedding-3-small"
    """The embeddings model."""
    embedding_batch_size: int = Field(default=64, ge=1)
    """Passages sent to the embeddings endpoint per request."""
    file_chunk_chars: int = Field(default=1000, ge=100)
    """Length of the passages a document is cut into for search, in characters."""
    file_chunk_overlap_chars: int = Field(default=200, ge=0)
    """Characters two neighbouring passages share."""
    file_whole_text_chars: int = Field(default=8000, ge=0)
    """A document whose text is at most this long is handed to the model whole."""
    file_search_top_k: int = Field(default=5, ge=1)
    """Passages returned per search."""
    file_max_inflated_bytes: int = Field(default=128 * 1024 * 1024, ge=1)
    """Bytes a docx, xlsx or pptx may unpack to, or one pdf page's content streams together:
    stops zip bombs before anything is unpacked."""
    file_max_pages: int = Field(default=2000, ge=1)
    """Pages of a pdf."""
    file_max_chars: int = Field(default=5_000_000, ge=1)
    """Characters of text one document may yield."""
    file_parse_memory_mb: int = Field(default=1024, ge=256)
    """Address space (MiB) of the child process that reads one document (and of the one
    that draws a page preview or a PDF)."""
    file_parse_seconds: float = Field(default=60.0, gt=0)
    """Wall time a document may take to read (or a page to draw), in its child process."""
    file_parse_workers: int = Field(default=2, ge=1)
    """Documents read at once; more uploads wait their turn."""
    preview_workers: int = Field(default=2, ge=1)
    """Pages drawn at once (`/file/preview`, report and deck PDFs, deck thumbnails), each in
    a child process with the `FILE_PARSE_MEMORY_MB` and `FILE_PARSE_SECONDS` limits
    (LibreOffice for office files; a deck's time: `PPTX_RENDER_TIMEOUT_SECONDS`); more wait
    their turn."""
    ocr_enabled: bool = True
    """Read scanned PDF pages and PNG/JPEG uploads by text recognition (Tesseract, Debian's
    `tesseract-ocr`), in the same child process and caps; `false`: such files are
    `failed`."""
    ocr_langs: str = Field(default="eng+chi_sim", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
    """Tesseract's languages, `+`-joined (each needs its `tesseract-ocr-<lang>` package)."""
    ocr_max_pages: int = Field(default=50, ge=1)
    """Scanned pages of one document read by OCR; a document with more is `failed`."""


class SkillsSection(SettingsSection):
    """Skills agent

    `/agent/skills/stream`: skills, a workspace and a sandboxed shell (docs/use/skills.md).
    """

    skills_dir: Path | None = None
    """A folder of your own skills (each a folder with a `SKILL.md`), beside the built-in
    ones; a skill of yours with a built-in skill's name replaces it. Empty: the built-in
    ones only."""
    skills_max_rounds: int = Field(default=20, ge=1)
    """Tool rounds of the skills agent before a last answer without tools."""
    skills_shell: ShellMode = "sandboxed"
    """`sandboxed`: the shell runs inside bubblewrap (no network, only the workspace
    writable, no secrets); without `bwrap` installed the shell refuses to run.
    `unsandboxed` runs it without the sandbox (warned at start-up): only where bubblewrap
    cannot work at all."""
    skills_shell_timeout_seconds: float = Field(default=120.0, gt=0)
    """Seconds a shell command may run before it is killed with all its processes; a call
    may ask for more, up to `SKILLS_SHELL_MAX_TIMEOUT_SECONDS`."""
    skills_shell_max_timeout_seconds: float = Field(default=600.0, gt=0)
    """The longest time limit a call may ask for; the CPU-time limit too."""
    skills_shell_output_bytes: int = Field(default=30000, ge=1000)
    """Output of a command kept for the model (its head and tail)."""
    skills_shell_memory_bytes: int = Field(default=2 * 1024**3, ge=64 * 1024**2)
    """Address space a command may use."""
    skills_shell_processes: int = Field(default=256, ge=8)
    """Processes a command may run."""
    skills_max_file_bytes: int = Field(default=50 * 1024 * 1024, ge=1024)
    """Largest file the shell may write and the file tools may read or write."""
    skills_keep_tool_results: int = Field(default=4, ge=0)
    """Tool outputs kept whole in the skills agent's context; older ones become short
    stubs."""
    skills_context_tokens: int = Field(default=60000, ge=1000)
    """Above this many tokens (tiktoken), the skills agent's older work is replaced by a
    summary."""


class PptxSection(SettingsSection):
    """PowerPoint agent

    `/agent/pptx/stream`: decks on shipped or uploaded templates (docs/use/powerpoint.md).
    """

    pptx_render_timeout_seconds: float = Field(default=60.0, gt=0)
    """Longest a deck may take to draw (and its PDF to be made); past it the build is stored
    `FAILED` at `RENDER`."""
    pptx_max_slides: int = Field(default=20, ge=3, le=30)
    """Most slides in one deck (3 to 30); a longer request is asked to choose again."""
    pptx_search_queries: int = Field(default=2, ge=0, le=5)
    """Web searches a deck build makes for its facts (0: none; needs `TAVILY_API_KEY`)."""
    pptx_previews: bool = True
    """Slide thumbnails of each deck (PNG) for the chat page, where LibreOffice's `soffice`
    is installed."""
    pptx_pdf: bool = True
    """A PDF of each deck version, made by LibreOffice (the thumbnails are drawn from it);
    without `soffice` the deck comes with the reason it has none."""
    pptx_image_base_url: str = ""
    """An OpenAI-compatible images API (`POST {base}/images/generations`) for pictures on
    the image-with-text slides; empty: no pictures, those slides are drawn as a text
    statement."""
    pptx_image_api_key: SecretStr = SecretStr("")
    """The images API's key, sent only as a Bearer header."""
    pptx_image_model: str = "gpt-image-1"
    """The images model."""


class TelemetrySection(SettingsSection):
    """Logs, traces and metrics

    What the service tells about itself (docs/operate/observability.md).
    """

    log_level: str = "INFO"
    """Level of the service's own log lines: `DEBUG`, `INFO`, `WARNING` or `ERROR`. Failed
    model and web-search calls are logged at `WARNING`, with the URL, the status and the
    provider's message (the key scrubbed)."""
    otel_exporter_otlp_endpoint: str = ""
    """An OTLP/HTTP collector's base URL (`http://collector:4318`; spans go to
    `{endpoint}/v1/traces`); set, it turns tracing on."""
    otel_traces_exporter: str = ""
    """`otlp`, `console` (spans printed to stdout) or `none`; empty: `otlp` when an endpoint
    is set, else tracing is off. The SDK's other `OTEL_*` variables
    (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`, ...)
    are read from the environment as usual."""
    otel_service_name: str = "dodo-agent"
    """The spans' `service.name`."""
    metrics_key: SecretStr = SecretStr("")
    """The bearer key `GET /metrics` asks for (`Authorization: Bearer <key>`). Empty:
    `/metrics` is open without authentication, and off (404) once any sign-in is on."""


class Settings(
    StorageSection,
    TasksSection,
    LanguageModelSection,
    ModelsSection,
    WebSearchSection,
    McpSection,
    OutboundSection,
    FetchSection,
    WebhookSection,
    A2aSection,
    AccessSection,
    LimitsSection,
    TurnsSection,
    MemorySection,
    SchedulesSection,
    DeepResearchSection,
    DocumentsSection,
    SkillsSection,
    PptxSection,
    TelemetrySection,
    BaseSettings,
):
    """Every setting, one section at a time (the bases, in this order)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_ignore_empty=True)

    @field_validator("data_dir")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @model_validator(mode="after")
    def _redis_topology(self) -> Self:
        """A Redis reached through Sentinels or as a Cluster is refused at start-up when the
        settings cannot describe it, rather than failing at the first turn."""
        sentinels = sentinel_addresses(self.redis_sentinels)
        if not (sentinels or self.redis_cluster):
            return self
        if not self.redis_url:
            raise ValueError(
                "REDIS_SENTINELS and REDIS_CLUSTER need REDIS_URL too (its password, database"
                " and scheme; with a Cluster, a node to start from)"
            )
        if sentinels and self.redis_cluster:
            raise ValueError("REDIS_SENTINELS and REDIS_CLUSTER exclude each other: set one")
        if sentinels and not self.redis_sentinel_master:
            raise ValueError("REDIS_SENTINELS needs REDIS_SENTINEL_MASTER, the monitored name")
        if self.redis_cluster and re.search(r"[{}]", self.redis_prefix):
            raise ValueError(
                "REDIS_PREFIX must have no { or } with REDIS_CLUSTER: the keys' hash tags follow it"
            )
        if self.redis_cluster and urlsplit(self.redis_url).path.strip("/") not in ("", "0"):
            raise ValueError("a Redis Cluster has database 0 only: REDIS_URL must end /0 or /")
        return self

    def user_by_key(self) -> dict[str, str]:
        """Parse API_KEYS into the SHA-256 (hex) of each key -> user; empty means auth is off.

        A key is listed as itself (`key:alice`) or as its SHA-256
        (`sha256:<hex>:alice`, what `printf %s key | sha256sum` prints), so a
        configuration need not hold the keys it accepts (a malformed one is a
        `ValueError`, raised when the app is built). Only digests are
        kept, and a caller's key is hashed before it is compared: every
        comparison is of two equally long strings, in constant time.
        """
        pairs: dict[str, str] = {}
        for number, item in enumerate(self.api_keys.get_secret_value().split(","), 1):
            item = item.strip()
            if item.startswith(HASHED_KEY):
                digest, _, user = item.removeprefix(HASHED_KEY).partition(":")
                digest = digest.strip().lower()
                if not (_SHA256_HEX.fullmatch(digest) and user.strip()):
                    # Said by position, not shown: the entry may be a key with a typo.
                    raise ValueError(f"API_KEYS entry {number} must be sha256:<64 hex digits>:user")
            else:
                key, sep, user = item.partition(":")
                digest = key_digest(key.strip()) if key.strip() and sep else ""
            if digest and user.strip():
                pairs[digest] = user.strip()
        return pairs

    def environment(self) -> dict[str, str]:
        """The variables a model's `apiKeyEnv` may name: the `.env` file's, then the process's.

        The one other place the environment is read, so a key named by a catalog
        entry is found wherever the settings themselves could have been.
        """
        env_file = self.model_config.get("env_file")
        found: dict[str, str] = {}
        if isinstance(env_file, str) and Path(env_file).is_file():
            found.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
        found.update(os.environ)
        return found

    def cors_origin_list(self) -> list[str]:
        """The origins a browser may call from; with API keys, `*` allows no other origin.

        A service with keys names the front ends it trusts: a wildcard would let
        any web page read its answers with a key the page got hold of.
        """
        origins = self._listed_origins()
        if self.authenticated():
            return [o for o in origins if o != "*"]
        return origins

    def migration_url(self) -> str:
        return self.migrate_database_url or self.database_url

    def migrates_through_pooler(self) -> bool:
        """Whether the start-up would migrate through the transaction pooler, which it refuses:
        a migration may need what a pooler does not keep (a session, a statement outside a
        transaction), and every instance starting would hold a pooled connection for it."""
        return self.db_transaction_pooler and self.auto_migrate and not self.migrate_database_url

    def cors_wildcard_refused(self) -> bool:
        return self.authenticated() and "*" in self._listed_origins()

    def authenticated(self) -> bool:
        """Whether callers must say who they are (keys, tokens or a sign-in proxy); else
        everyone is the one local user."""
        return bool(self.user_by_key() or self.oidc_issuer or self.auth_trusted_header)

    def _listed_origins(self) -> list[str]:
        return [o.strip() for o in self.cors_origins.split(",") if o.strip()]


def sentinel_addresses(listed: str) -> list[tuple[str, int]]:
    """REDIS_SENTINELS as (host, port) pairs; `[::1]:26379` for an IPv6 address."""
    addresses = []
    for item in filter(None, (part.strip() for part in listed.split(","))):
        host, _, port = item.rpartition(":")
        if not (host and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"REDIS_SENTINELS entry {item!r} must be host:port")
        addresses.append((host.removeprefix("[").removesuffix("]"), int(port)))
    return addresses


@dataclass_transform(frozen_default=True)
class SettingsPart:
    """Base of the frozen dataclass of settings one layer reads, declared without defaults.

    A field is read from the `Settings` field of its name after `prefix`
    (`class McpLimits(SettingsPart, prefix="mcp_")`), or of the name `renamed`
    gives it; a name that is no setting fails at import. The defaults are
    Settings' own (`defaults()`), so no part repeats one.
    """

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    _sources: ClassVar[Mapping[str, str]]
    """Each field -> the setting it is read from."""

    def __init_subclass__(cls, prefix: str = "", renamed: Mapping[str, str] | None = None) -> None:
        super().__init_subclass__()
        names = renamed or {}
        cls._sources = {f: names.get(f, prefix + f) for f in inspect.get_annotations(cls)}
        unknown = sorted(set(cls._sources.values()) - set(Settings.model_fields))
        if unknown:
            raise TypeError(f"{cls.__name__} reads no such setting: {', '.join(unknown)}")
        dataclasses.dataclass(frozen=True)(cls)

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        return cls(**{field: getattr(settings, name) for field, name in cls._sources.items()})

    @classmethod
    def defaults(cls) -> Self:
        """With the defaults `Settings` declares, whatever the environment says: a test or a
        benchmark starts from these and `dataclasses.replace`s what it changes."""
        return cls.from_settings(Settings.model_construct())
