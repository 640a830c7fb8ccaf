"""A TCP proxy whose open connections a test can cut, as a flaky network would.

A browser cannot be told to drop one response midway, but it sees a real
connection reset when the proxy aborts both sides of every connection it
carries. New connections go through as before, so the client can reconnect.

    async with cuttable_proxy(server_url) as proxy:
        ...  # point the client at proxy.url
        proxy.cut()
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit


class CuttableProxy:
    def __init__(self, target_url: str) -> None:
        target = urlsplit(target_url)
        self._host = target.hostname or "127.0.0.1"
        self._port = target.port or 80
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self.handlers: set[asyncio.Task[None]] = set()
        self.url = ""
        self.cuts = 0
        """Connections cut so far."""

    def cut(self) -> None:
        """Reset every open connection, both towards the client and towards the server."""
        for client, upstream in list(self._links):
            client.transport.abort()
            upstream.transport.abort()
            self.cuts += 1
        self._links.clear()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        upstream_reader, upstream_writer = await asyncio.open_connection(self._host, self._port)
        link = (writer, upstream_writer)
        self._links.add(link)
        pumps = {
            asyncio.create_task(_pump(reader, upstream_writer)),
            asyncio.create_task(_pump(upstream_reader, writer)),
        }
        try:
            # When either side closes, the exchange is over: close the other side too.
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.wait(pumps)
            self._links.discard(link)
            for side in link:
                side.close()
            self.handlers.discard(task)


@contextlib.asynccontextmanager
async def cuttable_proxy(target_url: str) -> AsyncIterator[CuttableProxy]:
    """A proxy to `target_url` listening on 127.0.0.1 at a free port, until the block ends."""
    proxy = CuttableProxy(target_url)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield proxy
    finally:
        server.close()
        proxy.cut()
        # Cut connections end their handlers; cancelling one instead would make
        # Python 3.11's asyncio log its CancelledError as an unhandled error.
        if proxy.handlers:
            _, stuck = await asyncio.wait(proxy.handlers, timeout=5)
            for task in stuck:
                task.cancel()
        await server.wait_closed()


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
