"""The event log of one run: every event numbered, encoded once, readable by many.

The run appends; HTTP responses (the first one, and any resume) are readers
that hold a cursor. A reader that fell behind gets everything it missed in
one batch, so a slow client costs one write per wake-up, not per event.
Waiting uses plain futures and `call_later` timers rather than a task per
wait: this is the per-token path.
"""

from __future__ import annotations

import asyncio

from app.core.events import Event, encode_data, encode_frame


class RunLog:
    def __init__(self) -> None:
        self._frames: list[bytes] = []
        self._waiters: list[asyncio.Future[None]] = []
        self.closed = False

    @property
    def last_id(self) -> int:
        return len(self._frames)

    def append(self, event: Event) -> int:
        """Number, encode and store the event; wake the readers. Returns its id (from 1)."""
        if self.closed:
            raise RuntimeError("append to a closed run log")
        event_id = len(self._frames) + 1
        self._frames.append(encode_frame(event_id, encode_data(event)))
        self._wake()
        return event_id

    def close(self) -> None:
        """No more events: readers drain what is left, then end."""
        self.closed = True
        self._wake()

    def read(self, after: int) -> bytes:
        """The frames after event id `after`, joined."""
        return b"".join(self._frames[after:])

    async def wait(self, after: int, idle: float) -> tuple[bytes, int]:
        """Frames after `after` and the new cursor; waits up to `idle` seconds when there are none.

        Returns empty bytes on timeout (the caller pings) and when the log is
        closed and fully read (the caller ends).
        """
        if after >= len(self._frames) and not self.closed:
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            timer = loop.call_later(idle, _resolve, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        return self.read(after), len(self._frames)

    def finished(self, cursor: int) -> bool:
        return self.closed and cursor >= len(self._frames)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _resolve(waiter)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
