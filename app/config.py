"""Settings, read once from the environment and `.env` when the app is built.

Nothing reads the environment anywhere else: `create_app(settings)` receives
this object, so tests build apps with their own settings side by side.
Secrets are `SecretStr` so they never print in a repr, a log or an error.

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

from dotenv import dotenv_values
from pydantic import Field, SecretStr, field_validator
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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_ignore_empty=True)

    database_url: str = "sqlite+aiosqlite:///./data/app.db"
    auto_migrate: bool = True
    """Apply Alembic migrations at start-up; turn off where deployments migrate separately."""
    db_pool_size: int = 20

    redis_url: str = ""
    """Empty: the in-process task registry (one instance only)."""
    redis_prefix: str = "dodo:"
    """Prefix of every Redis key and channel, so several deployments can share one Redis."""

    llm_provider: Provider = "openai"
    llm_base_url: str = ""
    llm_api_key: SecretStr = SecretStr("")
    llm_model: str = ""
    llm_timeout_seconds: float = 60.0
    """Longest wait for the first chunk, and between two chunks, of a model stream.

    Only when given (environment, `.env`) does it replace the provider's own
    default: 60 s, or 300 s for local servers, which may load the model first."""
    llm_connect_timeout_seconds: float = 10.0
    llm_max_response_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """Most bytes one model call's streamed answer may take; beyond, the turn fails."""
    llm_max_retries: int = 3
    llm_retry_max_delay_seconds: float = 20.0
    llm_max_connections: int = 1000
    """Pooled connections to the provider: at least the number of concurrent streams to hold."""
    llm_temperature: float | None = None
    llm_max_tokens: int | None = None
    llm_top_p: float | None = None
    llm_thinking_budget: int | None = Field(default=None, ge=0)
    """Tokens the model may reason with (Anthropic, Gemini, DashScope); 0: none; empty: default."""
    llm_structured_output: Literal["native", "prompt"] = "native"
    """How JSON steps ask for JSON: the provider's structured output, or only the prompt."""

    models: SecretStr = SecretStr("")
    """Named models beside the `LLM_*` one: a JSON list, or `@path` to a .json/.yaml file
    (README: Models). Secret: an entry may hold its key inline."""
    agent_models: str = ""
    """Each agent kind's default model id: `deep:strong,pptx:fast`; unnamed kinds: `default`."""
    deep_task_model: str = ""
    """The model id of deep research's task runs; empty: the turn's model."""
    deep_report_model: str = ""
    """The model id that writes deep research's report; empty: the turn's model."""

    tavily_api_key: SecretStr = SecretStr("")
    tavily_base_url: str = "https://api.tavily.com"
    tavily_max_results: int = 5

    web_search_provider: str = Field(
        default="tavily", pattern=r"^(tavily|mcp:[A-Za-z][A-Za-z0-9-]{0,29}(/[^/\s]+)?)$"
    )
    """`tavily` (its HTTP API), or `mcp:<server>[/<tool>]`: a search tool of an MCP server."""

    mcp_servers: SecretStr = SecretStr("")
    """MCP servers whose tools agents get: JSON, or a path to a JSON file (README: MCP tools)."""
    mcp_call_timeout_seconds: float = Field(default=60.0, gt=0)
    mcp_connect_timeout_seconds: float = Field(default=20.0, gt=0)
    """Longest a server may take to start and list its tools."""
    mcp_result_max_chars: int = Field(default=20000, ge=100)
    """Most of one MCP tool result the model is given; the rest is cut."""
    mcp_health_seconds: float = Field(default=30.0, gt=0)
    """How often a connected server is checked (its tool list read again)."""
    mcp_reconnect_min_seconds: float = Field(default=1.0, gt=0)
    mcp_reconnect_max_seconds: float = Field(default=60.0, gt=0)
    """A server that is down is tried again after a wait that doubles from min to max."""

    outbound_allowlist: str = ""
    """Hosts, addresses or CIDR ranges that a chosen URL may reach though not public."""
    outbound_max_bytes: int = Field(default=5 * 1024 * 1024, ge=1)
    """Most of one fetched page that is read; the rest is cut."""
    outbound_timeout_seconds: float = Field(default=20.0, gt=0)
    """Longest a fetch of a chosen URL may take, redirects included."""

    fetch_enabled: bool = True
    """Offer `fetch_page` (read a web page) to the web-search, deep, skills and host agents."""
    fetch_max_chars: int = Field(default=20000, ge=500)
    """Most of a read page's text the model is given; the rest is cut."""
    fetch_respect_robots: bool = True
    """Read only pages a site's robots.txt lets our User-Agent read."""
    fetch_user_agent: str = "dodo-agent/0.1 (an AI assistant reading a page it cites)"
    """Sent with every page and robots.txt fetch; its first word is our name in robots.txt."""
    fetch_cache_seconds: float = Field(default=600.0, ge=0)
    """How long a read page (and a site's robots.txt) is kept, shared through Redis when
    `REDIS_URL` is set; 0: not kept."""
    fetch_per_host: int = Field(default=2, ge=1)
    """Pages of one host read at the same time by one instance; more wait their turn."""
    fetch_max_parallel: int = Field(default=16, ge=1)
    """Pages read at the same time by one instance, all hosts together."""

    webhook_url: str = ""
    """Called when any turn ends, unless its request names its own `webhook`; empty: none."""
    webhook_secret: SecretStr = SecretStr("")
    """Key of the HMAC-SHA256 signature on every webhook call; empty: webhooks are off."""
    webhook_max_attempts: int = Field(default=5, ge=1)
    """Tries of one webhook call before it is given up (logged)."""
    webhook_retry_seconds: float = Field(default=1.0, gt=0)
    """Wait before the second try; it doubles after each failure."""
    webhook_timeout_seconds: float = Field(default=10.0, gt=0)
    a2a_agents: SecretStr = SecretStr("")
    """Remote A2A agents the host agent delegates to: `URL` or `URL|KEY`, comma-separated."""
    a2a_refresh_seconds: float = Field(default=300.0, gt=0)
    """How often the remote agents' cards are read again (an unreachable one is retried)."""
    a2a_timeout_seconds: float = Field(default=300.0, gt=0)
    """Longest silence of a remote agent's stream before the call counts as failed."""
    a2a_public_url: str = ""
    """Our base URL as other agents reach it, for the agent card; empty: the URL asked on."""

    api_keys: SecretStr = SecretStr("")
    """`key1:alice,key2:bob` (a key may be given as `sha256:<hex>:carol`); empty, and no
    `OIDC_ISSUER` or `AUTH_TRUSTED_HEADER`: no auth."""
    oidc_issuer: str = ""
    """An OpenID Connect issuer (`https://id.example.com/realms/team`): its access tokens are
    accepted as bearer tokens; discovery and JWKS are read through the outbound guard."""
    oidc_audience: str = ""
    """The `aud` a token must carry; empty: `OIDC_CLIENT_ID`."""
    oidc_client_id: str = ""
    """The chat page's public client at the issuer; set, the page signs users in (PKCE)."""
    oidc_scopes: str = "openid profile email"
    """Scopes the chat page asks for."""
    oidc_user_claim: str = "sub"
    """The claim that names the user (`sub`, `preferred_username`, `email`)."""
    oidc_groups_claim: str = "groups"
    """The claim listing the user's groups, matched by `ADMIN_USERS`' `group:<name>`."""
    oidc_jwks_refresh_seconds: float = Field(default=60.0, ge=0)
    """Least time between two reads of the JWKS caused by tokens naming an unknown `kid`."""
    auth_trusted_header: str = ""
    """A header a sign-in proxy names the user in (`X-Forwarded-User`); empty: none."""
    auth_trusted_proxies: str = ""
    """CIDRs the trusted header is believed from; from anywhere else it is ignored."""
    auth_trusted_groups_header: str = ""
    """A header the sign-in proxy lists the user's groups in, comma-separated
    (`X-Forwarded-Groups`); believed with the user's header only; empty: none."""
    admin_users: str = ""
    """Users who may see and stop anyone's runs, read usage and set limits: ids, or
    `group:<name>` for members of a group (the OIDC groups claim, or the sign-in proxy's
    groups header); comma-separated."""
    cors_origins: str = "*"
    """Comma-separated origins a browser may call the API from; `*` (any) only without auth."""

    data_dir: Path = Path("./data")
    task_ttl_seconds: int = Field(default=1800, ge=1)
    """Longest a claim outlives its last refresh: the backstop when Redis alone is left."""
    instance_dead_seconds: float = Field(default=15.0, gt=0)
    """With Redis: an instance silent this long is dead, and another marks its turns
    `interrupted` and frees their conversations; it beats five times in that span."""
    query_max_chars: int = Field(default=32000, ge=1)
    upload_max_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    request_headers_max_bytes: int = Field(default=32 * 1024, ge=1024)
    """Largest total size of a request's headers; larger answers 431."""
    request_head_timeout_seconds: float = Field(default=10.0, gt=0)
    """Longest a request's head (request line and headers) may take to arrive, from the
    connection's start or the previous answer; then the connection is closed."""
    request_body_timeout_seconds: float = Field(default=30.0, gt=0)
    """Longest a request's body (but an upload's) may take to arrive whole; then 408."""
    upload_body_timeout_seconds: float = Field(default=300.0, gt=0)
    """Longest an upload's body may take to arrive whole; then 408."""

    max_streams_per_user: int = Field(default=8, ge=0)
    """Streams (running turns) one user may have at once; more answer 429. 0: no limit."""
    streams_per_minute: int = Field(default=30, ge=0)
    """New streams per user and minute (a token bucket: a minute's worth may come at once)."""
    uploads_per_minute: int = Field(default=20, ge=0)

    max_starting_turns: int = Field(default=24, ge=1)
    """New turns storing their question at once; more wait their turn, so running streams flow."""

    sse_ping_seconds: float = Field(default=15.0, gt=0)
    on_disconnect: DisconnectPolicy = "continue"
    resume_retention_seconds: int = 300
    """How long a finished run's events stay readable by `/agent/resume`."""
    resume_max_events: int = Field(default=10000, ge=1)
    """Events of one run kept in its Redis Stream for other instances (older ones are trimmed)."""
    partial_save_seconds: float = Field(default=5.0, gt=0)
    """How often a running turn's answer so far is stored, so a crash loses at most this much."""
    store_retry_seconds: float = Field(default=120.0, gt=0)
    """How long a turn's final store retries an unreachable database (a restart, a failover)
    before the turn ends `error{STORE_FAILED}` + `complete{failed}`; `complete` waits meanwhile."""
    unstored_sweep_seconds: float = Field(default=30.0, gt=0)
    """How often each instance stores the turns whose own final store gave up (their outcomes
    kept in Redis meanwhile), once the database answers again. Needs `REDIS_URL`."""

    memory_max_turns: int = 10
    memory_max_tokens: int = 6000
    memory_enabled: bool = True
    """User memory (facts and preferences kept across conversations, `/memory`): off, no turn
    reads or writes it and `/memory` answers 404. Not the conversation's history above."""
    memory_tokens: int = Field(default=500, ge=0)
    """Tokens of a turn's system prompt given to the user's memory items (the most relevant)."""
    memory_max_items: int = Field(default=200, ge=1)
    """Memory items one user may keep; one more answers 409 (the `remember` tool: an error)."""
    react_max_rounds: int = 5
    tool_approval: str = ""
    """Tools that wait for the user's yes before they run: `bash,write_file,edit_file`,
    `mcp:*` or `mcp:<server>`, `*`; empty: only MCP tools marked destructive
    (app/agents/approvals.py)."""
    recommendations_enabled: bool = True
    tool_result_display_chars: int = 2000

    deep_max_parallel: int = Field(default=3, ge=1)
    """Deep research: tasks of a plan that run at the same time."""
    deep_max_rounds: int = Field(default=3, ge=1)
    """Deep research: plan -> tasks -> critique rounds before the report is written anyway."""
    deep_task_max_rounds: int = Field(default=5, ge=1)
    """Deep research: search-and-reason rounds of one task before it must answer."""
    deep_fetch_per_task: int = Field(default=3, ge=0)
    """Deep research: search results one task reads whole (their best passage is cited); 0: none."""
    deep_fetch_parallel: int = Field(default=4, ge=1)
    """Deep research: pages one turn reads at the same time, all its tasks together."""
    deep_report_formats: str = Field(
        default="docx,pdf", pattern=r"^\s*(none|((docx|pdf)\s*(,\s*|$))*)\s*$"
    )
    """Deep research: files each finished report is also given as: `docx`, `pdf` (made by
    LibreOffice from the docx) or both, comma-separated; `none` (an empty value in the
    environment keeps the default): none."""

    embedding_base_url: str = ""
    """An OpenAI-compatible `/embeddings` endpoint; empty: documents are searched by BM25 alone."""
    embedding_api_key: SecretStr = SecretStr("")
    embedding_model: str = "text-embedding-3-small"
    embedding_batch_size: int = Field(default=64, ge=1)
    file_chunk_chars: int = Field(default=1000, ge=100)
    """Length of the passages a document is cut into for search."""
    file_chunk_overlap_chars: int = Field(default=200, ge=0)
    file_whole_text_chars: int = Field(default=8000, ge=0)
    """A document whose text is at most this long is handed to the model whole."""
    file_search_top_k: int = Field(default=5, ge=1)
    file_max_inflated_bytes: int = Field(default=128 * 1024 * 1024, ge=1)
    """Bytes a docx or xlsx may unpack to, or one pdf page's content streams together;
    beyond: `failed`."""
    file_max_pages: int = Field(default=2000, ge=1)
    file_max_chars: int = Field(default=5_000_000, ge=1)
    """Characters of text one document may yield."""
    file_parse_memory_mb: int = Field(default=1024, ge=256)
    """Address space of the child process that reads one document."""
    file_parse_seconds: float = Field(default=60.0, gt=0)
    """Wall time a document may take to read, in its child process."""
    file_parse_workers: int = Field(default=2, ge=1)
    """Documents read at once; more uploads wait their turn."""
    preview_workers: int = Field(default=2, ge=1)
    """Pages drawn at once (`/file/preview`, report PDFs), each in a child process with the
    limits of document reading; more wait their turn."""
    ocr_enabled: bool = True
    """Read scanned PDF pages and PNG/JPEG uploads by text recognition (Tesseract)."""
    ocr_langs: str = Field(default="eng+chi_sim", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
    """Tesseract's languages, `+`-joined (each needs its `tesseract-ocr-<lang>` package)."""
    ocr_max_pages: int = Field(default=50, ge=1)
    """Scanned pages of one document read by OCR; a document with more is `failed`."""

    skills_dir: Path | None = None
    """A folder of the user's own skills (folders with a SKILL.md), beside the built-in ones."""
    skills_max_rounds: int = Field(default=20, ge=1)
    """Tool rounds of the skills agent before a last answer without tools."""
    skills_shell: ShellMode = "sandboxed"
    """`unsandboxed` runs the shell without bubblewrap: only where nothing else is possible."""
    skills_shell_timeout_seconds: float = Field(default=120.0, gt=0)
    skills_shell_max_timeout_seconds: float = Field(default=600.0, gt=0)
    """The longest time limit a call may ask for; the CPU-time limit too."""
    skills_shell_output_bytes: int = Field(default=30000, ge=1000)
    skills_shell_memory_bytes: int = Field(default=2 * 1024**3, ge=64 * 1024**2)
    skills_shell_processes: int = Field(default=256, ge=8)
    skills_max_file_bytes: int = Field(default=50 * 1024 * 1024, ge=1024)
    """Largest file the shell may write and the file tools may read or write."""
    skills_keep_tool_results: int = Field(default=4, ge=0)
    """Tool outputs kept whole in the skills agent's context; older ones become stubs."""
    skills_context_tokens: int = Field(default=60000, ge=1000)
    """Above this many tokens, the skills agent's older work is replaced by a summary."""

    pptx_render_timeout_seconds: float = Field(default=60.0, gt=0)
    """Longest a deck may take to draw; past it the build is stored FAILED at RENDER."""
    pptx_max_slides: int = Field(default=20, ge=3, le=30)
    """Most slides a deck may have; a longer request is asked to choose again."""
    pptx_search_queries: int = Field(default=2, ge=0, le=5)
    """Web searches a build makes for its facts (0: none)."""
    pptx_previews: bool = True
    """Slide thumbnails of each deck, where LibreOffice (`soffice`) is installed."""
    pptx_pdf: bool = True
    """A PDF of each deck version (LibreOffice; without it, the reason there is none)."""
    pptx_image_base_url: str = ""
    """An OpenAI-compatible images endpoint for the image-with-text slides; empty: none."""
    pptx_image_api_key: SecretStr = SecretStr("")
    pptx_image_model: str = "gpt-image-1"

    log_level: str = "INFO"

    otel_exporter_otlp_endpoint: str = ""
    """An OTLP/HTTP collector (`http://collector:4318`); set, it turns tracing on."""
    otel_traces_exporter: str = ""
    """`otlp`, `console` or `none`; empty: `otlp` when an endpoint is set, else tracing is off."""
    otel_service_name: str = "dodo-agent"
    metrics_key: SecretStr = SecretStr("")
    """The bearer key `/metrics` asks for; with API_KEYS set and none, `/metrics` is off (404)."""

    @field_validator("data_dir")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

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

    def cors_wildcard_refused(self) -> bool:
        return self.authenticated() and "*" in self._listed_origins()

    def authenticated(self) -> bool:
        """Whether callers must say who they are (keys, tokens or a sign-in proxy); else
        everyone is the one local user."""
        return bool(self.user_by_key() or self.oidc_issuer or self.auth_trusted_header)

    def _listed_origins(self) -> list[str]:
        return [o.strip() for o in self.cors_origins.split(",") if o.strip()]


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
