"""`/mcp`: our agents as MCP tools, for Claude Desktop, Claude Code, IDEs and agent frameworks.

This module is what `app.factory` imports: an ASGI endpoint that checks the
caller's key and hands the request to the MCP server, which it builds (and
with it imports the `mcp` package, `app/api/mcp/server.py`) at the first
request to `/mcp`. A worker that is never asked over MCP never loads the
library (tests/unit/test_lazy_imports.py).

A 2026-07-28 call is a POST of its own, answered by any instance; a 2025
revision's session lives in the memory of the instance that opened it (the
SDK's session manager), so behind several instances `/mcp` is routed by its
`Mcp-Session-Id` header. The runs themselves are ordinary turns, stored and
stoppable from anywhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from app.agents.registry import AgentEntry
from app.api.auth import current_caller
from app.api.deps import Services
from app.api.envelope import ApiError, error_body

if TYPE_CHECKING:
    from app.api.mcp.server import McpServer

MCP_PATH = "/mcp"
CALLER_KEY = "mcp_caller"
"""Where the endpoint leaves the authenticated caller (`Caller`), in the request's `state`."""


class McpSurface:
    """The MCP server of one app, built at its first request and closed with the app."""

    def __init__(self, services: Callable[[], Services], entries: Sequence[AgentEntry]) -> None:
        self._services = services
        self._entries = tuple(entries)
        self._server: McpServer | None = None
        self._starting: asyncio.Lock | None = None
        self._closed = False

    async def server(self) -> McpServer:
        if self._server is not None:
            return self._server
        self._starting = self._starting or asyncio.Lock()
        async with self._starting:
            if self._closed:
                raise ApiError(503, "The service is shutting down")
            if self._server is None:
                # Imported here, not at the top: it imports the `mcp` package.
                from app.api.mcp.server import McpServer

                self._server = await McpServer.start(self._services, self._entries)
        return self._server

    async def close(self) -> None:
        """Ends every MCP session; a run a call started goes on, and is stored, as ever."""
        self._closed = True
        if self._server is not None:
            await self._server.close()


class McpEndpoint:
    """The ASGI app at `/mcp`: 401 without a valid credential (with sign-in on), else the server."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope["app"]
        services: Services = app.state.services
        surface: McpSurface = app.state.mcp
        try:
            caller = await current_caller(Request(scope), services)
            server = await surface.server()
        except ApiError as exc:
            response = JSONResponse(
                error_body(exc.status_code, str(exc.detail)),
                status_code=exc.status_code,
                headers=exc.headers,
            )
            await response(scope, receive, send)
            return
        # Starlette's `request.state` is this dict: the tool handlers read the caller from it.
        scope.setdefault("state", {})[CALLER_KEY] = caller
        await server.handle(scope, receive, send)
