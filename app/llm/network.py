"""The model client's network layer, on asyncio's own transports rather than anyio's.

httpcore reads a model's stream through its network layer, one `read` per
chunk of tokens. Its default layer (anyio) arms a cancel scope around each
read to bound it: entering and leaving that scope asks sniffio and anyio
which event loop runs, every time, and cost three to four times the read
itself. At fifty streams it was a tenth of the service's CPU, as much as
everything the service adds to a turn's start (bench/README.md, "The first
burst"). Here a connection is an `asyncio.Protocol` that buffers what
arrives; a read takes from the buffer, and only when the buffer is empty
waits on one future with one timer.

It keeps httpcore's interface and its errors (`ReadTimeout`, `ReadError`,
`ConnectError`, ...), so the pool and the client above it cannot tell the
difference. Before the pool reuses an idle connection it asks whether the
server closed it (`is_readable`): the buffer and the end of the stream
answer that without a system call, and one `poll` catches what the loop
has not delivered yet.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any, cast

import httpcore2

# httpcore's own probe, as its streams answer `is_readable`, given the socket directly.
from httpcore2._utils import is_socket_readable

_PAUSE_BYTES = 256 * 1024
"""Unread bytes at which the connection stops reading its socket until the reader catches up."""
_RESUME_BYTES = 64 * 1024


class AsyncioNetwork(httpcore2.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = None if local_address is None else (local_address, 0)
        return await _connect(
            loop.create_connection(_Connection, host, port, local_addr=local),
            timeout,
            socket_options,
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        return await _connect(
            loop.create_unix_connection(_Connection, path), timeout, socket_options
        )

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def _connect(
    opening: Any,
    timeout: float | None,  # noqa: ASYNC109
    socket_options: Iterable[httpcore2.SOCKET_OPTION] | None,
) -> AsyncioStream:
    try:
        async with asyncio.timeout(timeout):
            transport, connection = await opening
    except TimeoutError as exc:  # before OSError: it is one
        raise httpcore2.ConnectTimeout(str(exc)) from exc
    except OSError as exc:
        raise httpcore2.ConnectError(str(exc)) from exc
    sock = transport.get_extra_info("socket")
    for option in socket_options or ():
        sock.setsockopt(*option)
    return AsyncioStream(transport, connection)


class _Connection(asyncio.Protocol):
    """What has arrived and not been read, and who waits for it (at most one reader)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False
        self.error: BaseException | None = None
        self.reader: asyncio.Future[None] | None = None
        self.writable: asyncio.Future[None] | None = None
        self.paused = False
        """Whether the transport stopped reading (`_PAUSE_BYTES`)."""
        self.write_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio's classes, only alike.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) >= _PAUSE_BYTES and self.transport is not None and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> None:
        self.ended = True
        self._wake_reader()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake_reader()
        self.write_paused = False
        self._wake_writer()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self._wake_writer()

    def _wake_reader(self) -> None:
        if self.reader is not None and not self.reader.done():
            self.reader.set_result(None)

    def _wake_writer(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)


class AsyncioStream(httpcore2.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, connection: _Connection) -> None:
        self._transport = transport
        self._connection = connection
        self._socket = transport.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        connection = self._connection
        if not connection.buffer and not connection.ended:
            await _wait(connection, "reader", timeout, httpcore2.ReadTimeout)
        buffer = connection.buffer
        if buffer:
            if len(buffer) <= max_bytes:
                data = bytes(buffer)
                buffer.clear()
            else:
                data = bytes(buffer[:max_bytes])
                del buffer[:max_bytes]
            if connection.paused and len(buffer) <= _RESUME_BYTES:
                connection.paused = False
                self._transport.resume_reading()
            return data
        if connection.error is not None:
            raise httpcore2.ReadError(str(connection.error)) from connection.error
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if not buffer:
            return
        connection = self._connection
        if self._transport.is_closing() or connection.ended:
            raise httpcore2.WriteError("the connection is closed")
        self._transport.write(buffer)
        if connection.write_paused:
            await _wait(connection, "writable", timeout, httpcore2.WriteTimeout)
            if connection.error is not None:
                raise httpcore2.WriteError(str(connection.error)) from connection.error

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport, self._connection, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError as exc:
            self._transport.abort()
            raise httpcore2.ConnectTimeout(str(exc)) from exc
        except (OSError, ssl.SSLError) as exc:
            self._transport.abort()
            raise httpcore2.ConnectError(str(exc)) from exc
        if transport is None:  # the connection closed during the handshake
            raise httpcore2.ConnectError("the connection closed during the TLS handshake")
        self._connection.transport = transport
        return AsyncioStream(transport, self._connection)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            connection = self._connection
            return bool(connection.buffer) or connection.ended or is_socket_readable(self._socket)
        if info == "socket":
            return self._socket
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        return None


async def _wait(
    connection: _Connection,
    slot: str,
    timeout: float | None,  # noqa: ASYNC109
    expired: type[httpcore2.TimeoutException],
) -> None:
    """Until the connection wakes `slot` ("reader" or "writable"), or `timeout` passes."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()
    setattr(connection, slot, waiter)
    timer = None if timeout is None else loop.call_later(timeout, _expire, waiter)
    try:
        await waiter
    except TimeoutError as exc:
        raise expired(f"timed out after {timeout} s") from exc
    finally:
        setattr(connection, slot, None)
        if timer is not None:
            timer.cancel()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())
