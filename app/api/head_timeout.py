"""uvicorn's HTTP protocol, closing a connection whose request head does not arrive in time.

uvicorn (0.54, httptools) bounds only the wait between a finished answer
and the next request, and only until the first byte of it: a connection
that sends nothing, or a head a byte at a time, is held for as long as the
client likes, a file descriptor and a buffer each. The app cannot bound
that: it is not called before the head is complete. So this protocol
starts a clock when a connection opens and when an answer is finished,
and closes the connection when no new head has been handed to the app
by `REQUEST_HEAD_TIMEOUT_SECONDS`. The body is the app's to bound
(api/body_limit.py).

The app gives the bound in its lifespan state (`HEAD_TIMEOUT_KEY`), so the
value comes from its settings however it is served: `uvicorn app.main:app
--http app.api.head_timeout:HeadTimeoutProtocol` (scripts/run, the
Dockerfile), or `http=HeadTimeoutProtocol` (tests/support/server.py).
Without that key it is uvicorn's own protocol.

It also closes gently when a request's body or head is still coming. A
connection closed with the client's bytes unread (a body cut at its time
limit or its size cap, a head past its own) makes the kernel answer with a
reset, which can reach the client before it read what we sent and lose it:
the 408 becomes "connection reset". So such a close sends the answer and
then our end of the stream (`write_eof`), drops whatever else the client
sends, and closes when the client does, or after `LINGER_SECONDS`. Any other close (an idle
connection, shutdown) is immediate, as uvicorn's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

UVICORN_FLAGS = ("--http", f"{__name__}:HeadTimeoutProtocol")
"""What uvicorn is given to serve with this protocol (scripts/run and the Dockerfile spell it
out; the tests and the benchmark start the service with these)."""
HEAD_TIMEOUT_KEY = "request_head_timeout_seconds"
LINGER_SECONDS = 2.0
"""Longest a closed connection waits for the client to close its end, reading and dropping."""


class LingeringClose:
    """The connection's transport, whose `close()` half-closes and lingers (see above)."""

    def __init__(
        self,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        unread: Callable[[], bool],
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._unread = unread
        """Whether the client may still be sending (a request body not all read)."""
        self._closing = False
        self._linger: asyncio.TimerHandle | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self._closing or self._transport.is_closing()

    def close(self) -> None:
        self._close(gently=self._unread())

    def close_gently(self) -> None:
        """Close as if the client were still sending (its head is late, and may be trickling)."""
        self._close(gently=True)

    def _close(self, *, gently: bool) -> None:
        if self._closing:
            return
        self._closing = True
        transport = self._transport
        if not gently or transport.is_closing() or not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        transport.resume_reading()
        self._linger = self._loop.call_later(LINGER_SECONDS, transport.close)

    def lost(self) -> None:
        if self._linger is not None:
            self._linger.cancel()


class HeadTimeoutProtocol(HttpToolsProtocol):
    _head_timer: asyncio.TimerHandle | None = None
    _waiting_after: RequestResponseCycle | None = None
    """The request whose head was the last one seen when the clock started."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._lingering = LingeringClose(transport, self.loop, self._body_coming)
        super().connection_made(cast(asyncio.Transport, self._lingering))
        self._start_head_clock()

    def _body_coming(self) -> bool:
        return self.cycle is not None and self.cycle.more_body

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # closed by us, lingering: what the client still sends is dropped
        super().data_received(data)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._start_head_clock()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_clock()
        self._lingering.lost()
        super().connection_lost(exc)

    def _start_head_clock(self) -> None:
        self._stop_head_clock()
        seconds = self.app_state.get(HEAD_TIMEOUT_KEY)
        if seconds is None or self.transport.is_closing():
            return
        self._waiting_after = self.cycle
        self._head_timer = self.loop.call_later(seconds, self._head_overdue)

    def _stop_head_clock(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_overdue(self) -> None:
        self._head_timer = None
        # A new head since the clock started: its request (perhaps a long stream) is the app's.
        # The one request already being answered (pipelined) is not waiting for a head either.
        if self.cycle is self._waiting_after and (
            self.cycle is None or self.cycle.response_complete
        ):
            self._lingering.close_gently()
