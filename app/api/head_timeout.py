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
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

UVICORN_FLAGS = ("--http", f"{__name__}:HeadTimeoutProtocol")
"""What uvicorn is given to serve with this protocol (scripts/run and the Dockerfile spell it
out; the tests and the benchmark start the service with these)."""
HEAD_TIMEOUT_KEY = "request_head_timeout_seconds"


class HeadTimeoutProtocol(HttpToolsProtocol):
    _head_timer: asyncio.TimerHandle | None = None
    _waiting_after: RequestResponseCycle | None = None
    """The request whose head was the last one seen when the clock started."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_clock()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._start_head_clock()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_clock()
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
            self.transport.close()
