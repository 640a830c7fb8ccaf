"""The model client's connection pool: a free connection found without walking the others.

httpcore's pool settles its whole state each time a request starts and each
time a response ends: it walks every connection (closed? expired? idle?
reserved?) and every waiting request. Each open stream holds a connection to
the model, so with a thousand streams open that walk was three tenths of the
service's CPU (bench/README.md, "The floor cut"). This pool keeps the idle
connections of each origin on a stack and only counts the busy ones: a
request takes the most recently used idle connection (its server is the
least likely to have closed it), or opens one, or, when the pool is full,
waits its turn for one to come back.

The connections are still httpcore's, made by the pool httpx2 configured
(TLS, proxy, network layer); only the bookkeeping is ours. It speaks
HTTP/1.1, one request per connection at a time, as the model client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import types
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator
from typing import Self

import httpcore2

# httpcore's own interface and helpers, so a closing connection behaves as in its pool.
from httpcore2._async.interfaces import AsyncRequestInterface
from httpcore2._synchronization import AsyncShieldCancellation
from httpcore2._utils import safe_async_iterate

Connection = httpcore2.AsyncConnectionInterface
OriginKey = tuple[bytes, bytes, int]


class StackPool(AsyncRequestInterface):
    """An HTTP/1.1 pool of at most `max_connections`, keeping up to `max_idle` idle ones alive."""

    def __init__(
        self, maker: httpcore2.AsyncConnectionPool, *, max_connections: int, max_idle: int
    ) -> None:
        self._maker = maker
        """Makes the connections (`create_connection`); it never holds any itself."""
        self._max_connections = max_connections
        self._max_idle = min(max_idle, max_connections)
        self._idle: dict[OriginKey, deque[Connection]] = {}
        self._idle_count = 0
        self._busy: set[Connection] = set()
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def handle_async_request(self, request: httpcore2.Request) -> httpcore2.Response:
        url = request.url
        if url.scheme not in (b"http", b"https"):
            raise httpcore2.UnsupportedProtocol(f"unsupported scheme {url.scheme!r}")
        origin = url.origin
        key = (origin.scheme, origin.host, origin.port)
        timeout = request.extensions.get("timeout", {}).get("pool")
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        while True:
            connection = await self._acquire(origin, key, deadline)
            try:
                response = await connection.handle_async_request(request)
            except httpcore2.ConnectionNotAvailable:
                # Taken as idle, it was not: drop it and take another.
                await self._release(connection, key)
                continue
            except BaseException:
                await self._release(connection, key)
                raise
            assert isinstance(response.stream, AsyncIterable)
            stream = _ReturningStream(response.stream, self, connection, key)
            return httpcore2.Response(
                status=response.status,
                headers=response.headers,
                content=stream,
                extensions=response.extensions,
            )

    async def _acquire(
        self, origin: httpcore2.Origin, key: OriginKey, deadline: float | None
    ) -> Connection:
        while True:
            stale: list[Connection] = []
            connection = self._reuse(key, stale)
            if connection is None and self._room(stale):
                connection = self._maker.create_connection(origin)
            if connection is not None:
                self._busy.add(connection)  # before any await: the slot is taken
            await _close(stale)
            if connection is not None:
                return connection
            await self._wait(deadline)

    def _reuse(self, key: OriginKey, stale: list[Connection]) -> Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            # `has_expired` also asks the socket whether the server has closed it.
            if connection.is_available() and not connection.has_expired():
                return connection
            stale.append(connection)
        return None

    def _room(self, stale: list[Connection]) -> bool:
        """Whether a connection may open: under the limit, or in place of an idle one elsewhere."""
        if len(self._busy) + self._idle_count < self._max_connections:
            return True
        for idle in self._idle.values():
            if idle:
                stale.append(idle.popleft())
                self._idle_count -= 1
                return True
        return False

    async def _wait(self, deadline: float | None) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout_at(deadline):
                await waiter
        except BaseException as error:
            if waiter.done() and not waiter.cancelled():
                self._wake()  # woken, but leaving: the turn passes to the next in line
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            if isinstance(error, TimeoutError):
                raise httpcore2.PoolTimeout("no model connection came free in time") from None
            raise

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def _release(self, connection: Connection, key: OriginKey) -> None:
        """A request is over: keep its connection for the next one, or close it."""
        self._busy.discard(connection)
        stale: list[Connection] = []
        if connection.is_available() and self._idle_count < self._max_idle:
            idle = self._idle.setdefault(key, deque())
            # The oldest idle connection is the likeliest to have expired; looking
            # at it on each return closes expired ones without a walk or a timer.
            if idle and idle[0].has_expired():
                stale.append(idle.popleft())
                self._idle_count -= 1
            idle.append(connection)
            self._idle_count += 1
        else:
            stale.append(connection)
        self._wake()
        await _close(stale)

    @property
    def connections(self) -> list[Connection]:
        return [*self._busy, *(c for idle in self._idle.values() for c in idle)]

    async def aclose(self) -> None:
        closing = self.connections
        self._busy.clear()
        self._idle.clear()
        self._idle_count = 0
        await _close(closing)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: types.TracebackType | None = None,
    ) -> None:
        await self.aclose()


class _ReturningStream:
    """A response's body; closing it gives the connection back to the pool."""

    def __init__(
        self, stream: AsyncIterable[bytes], pool: StackPool, connection: Connection, key: OriginKey
    ) -> None:
        self._stream = stream
        self._pool = pool
        self._connection = connection
        self._key = key
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async with safe_async_iterate(self._stream) as chunks:
            async for chunk in chunks:
                yield chunk

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            with AsyncShieldCancellation():
                if hasattr(self._stream, "aclose"):
                    await self._stream.aclose()
        finally:
            await self._pool._release(self._connection, self._key)


async def _close(connections: list[Connection]) -> None:
    if connections:
        with AsyncShieldCancellation():
            for connection in connections:
                await connection.aclose()
