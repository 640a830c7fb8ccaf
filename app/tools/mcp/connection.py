"""One MCP server, kept connected for the app's life by a supervising task.

    starting -> up -> (lost) -> down -> (backoff) -> up -> ...

The supervisor opens the SDK's `Client` (a child process over stdio, or
streamable HTTP), lists the server's tools and marks the server `up`; it then
checks the server every `health_seconds` by listing its tools again (which
also picks up a changed list). A failed check, a failed start, or a call that
finds the connection closed marks it `down`: its tools leave the next turns'
tool lists, and the supervisor reconnects after a wait that doubles from
`reconnect_min_seconds` to `reconnect_max_seconds`.

The `Client` lives inside the supervising task (anyio's task groups must be
left by the task that entered them); turns call through it from their own
tasks. Errors are `app/tools/mcp/errors.py`'s; their texts, like `last_error`,
are scrubbed of the server's secrets.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    REQUEST_TIMEOUT,
    CallToolResult,
    Implementation,
    Tool,
)
from pydantic import ValidationError

from app.core.urls import public_url
from app.tools.mcp.config import McpLimits, McpServerConfig
from app.tools.mcp.errors import McpCallFailed, McpUnavailable

log = logging.getLogger(__name__)

Status = Literal["starting", "up", "down"]
_ERROR_CHARS = 300
_MAX_TOOL_PAGES = 20
_MAX_SSE_EVENT_BYTES = 8 * 1024 * 1024
CLIENT_INFO = Implementation(name="dodo-agent", version="0.1.0")


class _Lost(Exception):
    """The connection was found closed by a call or a check."""


class McpConnection:
    def __init__(self, config: McpServerConfig, limits: McpLimits) -> None:
        self.config = config
        self._limits = limits
        self._secrets = config.secrets()
        self._client: Client | None = None
        self._lost = asyncio.Event()
        self._http_status: int | None = None
        self.status: Status = "starting"
        self.tools: tuple[Tool, ...] = ()
        """The server's tools while it is up; empty otherwise."""
        self.last_error: str | None = None
        self.since = datetime.now(UTC)
        self.attempted = asyncio.Event()
        """Set once the first connection attempt has ended, either way."""

    @property
    def name(self) -> str:
        return self.config.name

    def report(self) -> dict[str, Any]:
        """What `/ready` shows of this server."""
        shown: dict[str, Any] = {
            "status": self.status,
            "transport": self.config.transport,
            "tools": len(self.tools),
            "since": self.since.isoformat(),
        }
        if self.last_error is not None:
            shown["lastError"] = self.last_error
        return shown

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        client = self._client
        if client is None or self.status != "up":
            raise McpUnavailable(f"the MCP server {self.name!r} is unavailable")
        timeout = self._limits.call_timeout_seconds
        try:
            async with asyncio.timeout(timeout):
                return await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except TimeoutError:
            raise McpCallFailed(f"no answer within {timeout:g} s") from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED or _session_gone(exc):
                self._mark_lost(exc)
                raise McpUnavailable(f"the MCP server {self.name!r} went away") from None
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallFailed(f"no answer within {timeout:g} s") from None
            raise McpCallFailed(self._describe(exc)) from None
        except ValidationError:
            raise McpCallFailed("the server's answer is not a valid tool result") from None
        except Exception as exc:  # a transport's failure: the connection is gone
            self._mark_lost(exc)
            raise McpUnavailable(f"the MCP server {self.name!r} went away") from None

    async def supervise(self) -> None:
        """Connect, watch, reconnect with backoff; ends only when cancelled (shutdown)."""
        delay = self._limits.reconnect_min_seconds
        while True:
            try:
                async with self._connected() as client:
                    self._lost.clear()
                    self._client = client
                    self._http_status = None
                    self._set("up", None)
                    delay = self._limits.reconnect_min_seconds
                    await self._watch(client)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if _cancelling():
                    # A shutdown's cancel that the transport's cleanup turned into another
                    # error: going on to the backoff sleep would swallow it for good.
                    raise asyncio.CancelledError from exc
                if not (isinstance(exc, _Lost) and self.status == "down"):
                    self._set("down", self._describe(exc))
            finally:
                self._client = None
                self.tools = ()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._limits.reconnect_max_seconds)

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[Client]:
        async with AsyncExitStack() as stack:
            async with asyncio.timeout(self._limits.connect_timeout_seconds):
                client = await stack.enter_async_context(self._client_for(stack))
                self.tools = await self._list_tools(client)
            yield client

    def _client_for(self, stack: AsyncExitStack) -> Client:
        config = self.config
        timeout = self._limits.call_timeout_seconds
        server: StdioServerParameters | Transport
        if config.command is not None:
            server = StdioServerParameters(
                command=config.command, args=config.args, env=config.env, cwd=config.cwd
            )
        else:
            http = httpx2.AsyncClient(
                headers=config.headers,
                timeout=httpx2.Timeout(self._limits.connect_timeout_seconds, read=None),
                event_hooks={"response": [self._saw]},
            )
            stack.push_async_callback(http.aclose)
            server = streamable_http_client(
                str(config.url), http_client=http, max_sse_event_size=_MAX_SSE_EVENT_BYTES
            )
        return Client(server, read_timeout_seconds=timeout, client_info=CLIENT_INFO)

    async def _saw(self, response: httpx2.Response) -> None:
        """Keep an HTTP error's status: the SDK's error for it does not say it (a 401 does)."""
        if response.status_code >= 400:
            self._http_status = response.status_code

    async def _list_tools(self, client: Client) -> tuple[Tool, ...]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tuple(tools)

    async def _watch(self, client: Client) -> None:
        """Return never; raise when the connection is lost or a check fails."""
        while True:
            try:
                async with asyncio.timeout(self._limits.health_seconds):
                    await self._lost.wait()
                raise _Lost("the connection closed")
            except TimeoutError:
                pass
            async with asyncio.timeout(self._limits.call_timeout_seconds):
                tools = await self._list_tools(client)
            if tools != self.tools:
                self.tools = tools
                log.info("MCP server %s now lists %d tool(s)", self.name, len(tools))

    def _mark_lost(self, exc: BaseException) -> None:
        if self.status == "up":
            self._set("down", self._describe(exc))
        self._lost.set()

    def _set(self, status: Status, error: str | None) -> None:
        if status == "up":
            log.info("MCP server %s is up with %d tool(s)", self.name, len(self.tools))
        elif self.status != "down" or error != self.last_error:
            log.warning("MCP server %s is down: %s", self.name, error)
        if status != self.status:
            self.since = datetime.now(UTC)
        self.status = status
        if error is not None:
            self.last_error = error
        self.attempted.set()

    def _describe(self, exc: BaseException) -> str:
        """The error as `/ready` and the log show it: its innermost cause, short, secrets out."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if isinstance(exc, TimeoutError):
            text = "no answer in time"
        else:
            text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
        if isinstance(exc, MCPError) and self._http_status is not None:
            text += f" (HTTP {self._http_status})"
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        if self.config.url:
            text = text.replace(self.config.url, public_url(self.config.url))
        return text[:_ERROR_CHARS]


def _session_gone(exc: MCPError) -> bool:
    """A restarted HTTP server no longer knows our session (404): the connection is over."""
    return exc.code == INVALID_REQUEST and str(exc) == "Session terminated"


def _cancelling() -> bool:
    """Whether this task has been asked to stop, even if the CancelledError was lost."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
