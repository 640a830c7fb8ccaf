"""Run an ASGI app on a real loopback socket inside the test's event loop.

The socket is bound and listening before uvicorn starts, so a client may
connect at once: its connection waits in the backlog until the app (and its
lifespan start-up) is ready, and no test has to poll for readiness.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import uvicorn
from starlette.types import ASGIApp

from app.api.head_timeout import HeadTimeoutProtocol


@contextlib.asynccontextmanager
async def serve(app: ASGIApp, *, lifespan: str = "on", port: int = 0) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1 at a free port (or `port`, to serve again where a
    stopped server was); yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan=lifespan,  # type: ignore[arg-type]
        timeout_graceful_shutdown=5,
        ws="none",
        # As scripts/run serves the app: heads that do not come are timed out.
        http=HeadTimeoutProtocol,
    )
    server = uvicorn.Server(config)
    # `_serve` is `serve` without taking over the process's signal handlers, which
    # several servers alive at once in one test must not fight over.
    task = asyncio.create_task(server._serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
