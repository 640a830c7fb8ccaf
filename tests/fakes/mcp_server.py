"""A small MCP server written with the `mcp` package, for the MCP client's tests.

The same tools are served over stdio (`python -m tests.fakes.mcp_server`, run
by the app as a child process) and over streamable HTTP (`build(...)`'s
`streamable_http_app()`, served by uvicorn in the test). Its tools:

- `lookup`: a part's warranty, with a source URL in the text;
- `tavily-search`: answers in the text format the Tavily MCP server uses
  (`Title:`/`URL:`/`Content:` blocks), so web search can come from it;
- `whoami`: a digest of the secret the server was started with (its env), so a
  test can check the secret reached the server without it showing in the turn;
- `flood`: a result larger than the client keeps;
- `slow`: never answers in time;
- `erase`: marked `destructiveHint` by the server, so it waits for the user's yes.

Run as a process, it first checks its gate: with `FAKE_MCP_GATE` set to a path
that does not exist, it exits at once, as a server that fails to start does;
with `FAKE_MCP_PID_FILE` set, it writes its pid there so a test can kill it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

SECRET_ENV = "FAKE_MCP_SECRET"


def fingerprint(secret: str) -> str:
    """What `whoami` shows of a secret: enough to tell it arrived, not the secret."""
    return hashlib.sha256(secret.encode()).hexdigest()[:12]


def build(secret: str = "") -> MCPServer:
    """The server; `secret` is what `whoami` reports (the HTTP test passes its header)."""
    server = MCPServer("fake-mcp", instructions="Test tools.")

    @server.tool(description="The warranty of a pump, by its SKU.")
    def lookup(sku: str) -> str:
        return f"Pump {sku}: warranty 7 years. Source: https://parts.example.test/{sku}"

    @server.tool(name="tavily-search", description="Search the web (Tavily's text format).")
    def tavily_search(query: str, max_results: int = 5) -> str:
        blocks = [
            f"Title: {query} result {n}\nURL: https://example.test/{query.replace(' ', '-')}/{n}"
            f"\nContent: Facts about {query}, number {n}."
            for n in range(1, min(max_results, 2) + 1)
        ]
        return "Detailed Results:\n\n" + "\n\n".join(blocks)

    @server.tool(description="Which secret this server was started with (its digest).")
    def whoami() -> str:
        return f"secret={fingerprint(secret or os.environ.get(SECRET_ENV, ''))}"

    @server.tool(description="A very long answer.")
    def flood(chars: int) -> str:
        return "x" * chars

    @server.tool(
        description="Erase a part's record.",
        annotations=ToolAnnotations(destructiveHint=True, readOnlyHint=False),
    )
    def erase(sku: str) -> str:
        return f"Erased {sku}."

    @server.tool(description="Takes far too long.")
    async def slow() -> str:
        await asyncio.sleep(3600)
        return "late"

    return server


def guarded(app: ASGIApp, authorization: str) -> ASGIApp:
    """`app`, answering 401 to an HTTP request without this `Authorization` header."""

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and Headers(scope=scope).get("authorization") != authorization:
            await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
            return
        await app(scope, receive, send)

    return guard


def main() -> None:
    gate = os.environ.get("FAKE_MCP_GATE")
    if gate and not Path(gate).exists():
        sys.exit(3)
    pid_file = os.environ.get("FAKE_MCP_PID_FILE")
    if pid_file:
        Path(pid_file).write_text(str(os.getpid()))
    build().run("stdio")


if __name__ == "__main__":
    main()
