"""Sections of what the service calls outside: web search, MCP servers, fetched pages,
webhooks and remote agents."""

from __future__ import annotations

from pydantic import Field, SecretStr

from app.config.base import SettingsSection


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
