"""`MCP_SERVERS`: which MCP servers the agents get tools from, and how each is reached.

The value is JSON, or the path of a JSON file holding it: a list of servers,
or the `{"mcpServers": {name: server}}` object other MCP hosts use, so an
existing host's file can be pointed at. A server is either a command run as a
child process over stdio (`command`, `args`, `env`) or a streamable-HTTP
endpoint (`url`, `headers`); `agents` names the agent kinds that get its
tools (default: the chat agent).

Header and env values are secrets (API keys travel there): they are kept
for the connection only, and `secrets()` lists them so every error text
shown in `/ready` or logged can be scrubbed of them. A configuration error
says where it is, never the value found there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from app.config import SettingsPart

SERVER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,29}")
"""A server's name prefixes its tools' names (`name__tool`), so it keeps to what every
provider allows in a tool name, and has no `_` so the `__` between the two stays unique."""
AGENT_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Unique; shown in `/ready` and prefixed to the server's tool names."""
    type: Literal["stdio", "http", "streamable-http", "streamableHttp"] | None = None
    """Optional, as other MCP hosts write it; the transport follows from `command` or `url`."""
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Added to the few variables a child inherits (PATH, HOME, ...); the service's own
    environment, its keys included, is not passed on."""
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    agents: list[str] = Field(default_factory=lambda: ["chat"])
    """Agent kinds whose tool lists get this server's tools; `[]` for none (a server
    used only as the web search)."""

    @model_validator(mode="after")
    def _check(self) -> McpServerConfig:
        if not SERVER_NAME.fullmatch(self.name):
            raise ValueError("name must be a letter then up to 29 letters, digits or '-' (no '_')")
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (stdio) or `url` (streamable HTTP)")
        if self.url is not None and urlsplit(self.url).scheme not in ("http", "https"):
            raise ValueError("url must be http:// or https://")
        bad = [kind for kind in self.agents if not AGENT_KIND.fullmatch(kind)]
        if bad:
            raise ValueError(f"agents lists names that are not agent kinds: {bad}")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def secrets(self) -> list[str]:
        """Every value an error text must not show: headers, env values, the URL's
        password and query values (remote servers often take their key in the query)."""
        values = [*self.headers.values(), *self.env.values()]
        for value in self.headers.values():
            # `Bearer <key>`: the key alone may be echoed without its scheme.
            values.extend(value.split()[1:])
        if self.url:
            parts = urlsplit(self.url)
            values.extend(v for _, v in parse_qsl(parts.query))
            if parts.password:
                values.append(parts.password)
        return sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)


def parse_servers(value: str) -> list[McpServerConfig]:
    """The servers `MCP_SERVERS` names: inline JSON, or a path to a JSON file. Raises
    `ValueError` saying what is wrong and where, without the values."""
    text = value.strip()
    if not text:
        return []
    if text[0] not in "[{":
        path = Path(text).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"MCP_SERVERS: cannot read {path}: {exc.strerror}") from None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"MCP_SERVERS is not valid JSON ({exc.msg} at char {exc.pos})") from None
    servers = _entries(data)
    found: list[McpServerConfig] = []
    for index, entry in enumerate(servers):
        try:
            found.append(McpServerConfig.model_validate(entry))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'server'}: {error['msg']}"
                for error in exc.errors(include_input=False, include_url=False)
            )
            raise ValueError(f"MCP_SERVERS entry {index + 1}: {problems}") from None
    names = [server.name for server in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"MCP_SERVERS names a server twice: {duplicates}")
    return found


def _entries(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
        return [
            {**entry, "name": name} if isinstance(entry, dict) else entry
            for name, entry in data["mcpServers"].items()
        ]
    raise ValueError('MCP_SERVERS must be a JSON list of servers or {"mcpServers": {...}}')


class McpLimits(SettingsPart, prefix="mcp_"):
    call_timeout_seconds: float
    connect_timeout_seconds: float
    health_seconds: float
    reconnect_min_seconds: float
    reconnect_max_seconds: float
