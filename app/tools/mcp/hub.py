"""Every configured MCP server's connection, opened with the app and closed with it.

`McpHub.open()` starts one supervising task per server and waits (at most
the connect timeout) for each first attempt, so the first turns already see
the servers that start; a server that does not is left to reconnect in the
background and never stops the app from starting. Leaving the context
cancels the supervisors, which close their clients: child processes are
stopped (stdin closed, then the process group terminated) and HTTP sessions
ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from app.tools.mcp.config import McpLimits, McpServerConfig

if TYPE_CHECKING:
    from app.tools.mcp.connection import McpConnection


class McpHub:
    def __init__(self, servers: Sequence[McpServerConfig], limits: McpLimits) -> None:
        self.connections: dict[str, McpConnection] = {}
        if servers:
            # Here, not at import: a deployment without MCP servers never loads the client.
            from app.tools.mcp.connection import McpConnection

            self.connections = {server.name: McpConnection(server, limits) for server in servers}

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls, servers: Sequence[McpServerConfig], limits: McpLimits
    ) -> AsyncIterator[McpHub]:
        hub = cls(servers, limits)
        supervisors = [
            asyncio.create_task(conn.supervise(), name=f"mcp-{conn.name}")
            for conn in hub.connections.values()
        ]
        try:
            waits = [asyncio.create_task(c.attempted.wait()) for c in hub.connections.values()]
            if waits:
                # A little past the connect timeout: the attempt's own timeout ends it first.
                await asyncio.wait(waits, timeout=limits.connect_timeout_seconds + 1.0)
                for wait in waits:
                    wait.cancel()
            yield hub
        finally:
            for task in supervisors:
                task.cancel()
            await asyncio.gather(*supervisors, return_exceptions=True)

    def report(self) -> dict[str, dict[str, Any]]:
        """Each server's state for `/ready`: status, transport, tool count, last error."""
        return {name: conn.report() for name, conn in self.connections.items()}
