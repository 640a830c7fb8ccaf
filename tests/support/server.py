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
    task = asyncio.create_task(_run(server, sock))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def _run(server: uvicorn.Server, sock: socket.socket) -> None:
    """`_serve` is `serve` without taking over the process's signal handlers, which
    several servers alive at once in one test must not fight over.

    An app that fails to start makes uvicorn raise `SystemExit`, which asyncio lets out
    of the event loop: it ended pytest's loop and failed every test after this one. It
    fails this test alone instead, and the socket closes so that clients waiting in its
    backlog are refused at once rather than waiting for their timeout.
    """
    try:
        await server._serve(sockets=[sock])
    except SystemExit as exc:
        sock.close()
        raise RuntimeError(f"the served app did not start (uvicorn exit {exc.code})") from None
