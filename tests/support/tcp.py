"""A raw TCP server for tests that need a misbehaving peer (one that never answers, redirects
into a private network, counts connections), which no HTTP framework will play."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def tcp_server(handler: Handler, host: str = "127.0.0.1") -> AsyncIterator[int]:
    """Serve `handler` on a free port of `host`; yields the port.

    At exit it waits for every connection's handler to end (each ends when its
    client has gone): one left running would outlive the test's event loop and
    warn, later, in some other test. The writer is closed for the handler.
    """
    handlers: set[asyncio.Task[Any]] = set()

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            # A client may hang up mid-answer (a bounded read), as clients may.
            with contextlib.suppress(ConnectionError):
                await handler(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(tracked, host, 0)
    async with server:
        yield server.sockets[0].getsockname()[1]
    await asyncio.gather(*handlers)
