"""The event log of one run: every event numbered, encoded once, readable by many.

The run appends; HTTP responses (the first one, and any resume) are readers
that hold a cursor. A reader that fell behind gets everything it missed in
one batch, so a slow client costs one write per wake-up, not per event.
Waiting uses plain futures and `call_later` timers rather than a task per
wait: this is the per-token path.

`RunLog` lives in the memory of the instance running the run. With several
instances, a `SharedRunLogs` backend (Redis Streams, in `redis_log`) copies
each log out of band so other instances can read it too; both kinds of
reader meet the `EventLogReader` protocol, so a response does not care
where the log it reads is kept. One instance alone has `LocalRunLogs`:
the same interface, with nothing to copy and no other instance to ask.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from app.core.events import Event, encode_data
from app.core.frames import encode_frame
from app.tasks.base import Claim


class EventLogReader(Protocol):
    """What an SSE response reads: frames after a cursor, and whether the log has ended."""

    async def wait(self, after: int, idle: float) -> tuple[bytes, int]:
        """Frames after event id `after` and the new cursor; empty after `idle` silent seconds."""
        ...

    def finished(self, cursor: int) -> bool:
        """True once the log has ended and `cursor` is at its end: the response closes."""
        ...


class SharedRunLogs(Protocol):
    """Run logs published where every instance can read them (the Redis backend).

    Left out: a run's events are never read back by the instance that runs
    it; its own readers read the in-process `RunLog`.
    """

    async def publish(self, claim: Claim, log: RunLog) -> bool:
        """Copy `log` out until it has ended and is copied; failures are logged, never raised.

        True when the last copy also released the claim, in the same round
        trip; otherwise the runner releases it.
        """
        ...

    async def latest(self, user_id: str, conversation_id: str) -> str | None:
        """The task id of the conversation's running or most recent run, if still kept.

        Raises `TaskBackendUnavailable` when the backend cannot be reached.
        """
        ...

    async def reader(
        self, user_id: str, conversation_id: str, task_id: str, after: int
    ) -> EventLogReader | None:
        """A reader of that run's log from `after` on; None when nothing of it is kept.

        Raises `EventsGone` when the events right after `after` are no longer
        kept, and `TaskBackendUnavailable` when the backend cannot be reached.
        """
        ...

    async def last_event_id(self, task_id: str) -> int | None:
        """The id of the newest event of that run copied out so far; None if none is kept."""
        ...

    async def close(self) -> None: ...


class LocalRunLogs:
    """The `SharedRunLogs` of an instance that runs alone: every log is its own, in memory."""

    async def publish(self, claim: Claim, log: RunLog) -> bool:
        return False

    async def latest(self, user_id: str, conversation_id: str) -> str | None:
        return None

    async def reader(
        self, user_id: str, conversation_id: str, task_id: str, after: int
    ) -> EventLogReader | None:
        return None

    async def last_event_id(self, task_id: str) -> int | None:
        return None

    async def close(self) -> None:
        return None


class RunLog:
    """Frames numbered from 1; the last one may be held back from readers (see `end`)."""

    def __init__(self) -> None:
        self._frames: list[bytes] = []
        self._shown = 0
        """Frames readers may see: all but a final one `end()` holds back."""
        self._waiters: list[asyncio.Future[None]] = []
        self.ending = False
        """No more events will come; the log may still hold its last one back."""
        self.closed = False

    @property
    def last_id(self) -> int:
        """The id of the last event appended, shown or held."""
        return len(self._frames)

    def append(self, event: Event) -> int:
        """Number, encode and store the event; wake the readers. Returns its id (from 1)."""
        if self.ending:
            raise RuntimeError("append to an ended run log")
        event_id = self._add(event)
        self._shown = event_id
        self._wake()
        return event_id

    def end(self, final: Event | None = None) -> None:
        """No more events; `final`, if any, is kept from readers until `close()`.

        The run's `complete` waits here while the log is copied where other
        instances read it: a client that reads `complete` may ask another
        instance next, which must find the whole run there.
        """
        if final is not None and not self.ending:
            self._add(final)
        self.ending = True
        self._wake()

    def close(self) -> None:
        """Show everything: readers drain what is left, then end."""
        self.ending = self.closed = True
        self._shown = len(self._frames)
        self._wake()

    def read(self, after: int) -> bytes:
        """The frames readers may see after event id `after`, joined."""
        return b"".join(self._frames[after : self._shown])

    def frames_after(self, after: int) -> list[bytes]:
        """Every frame after event id `after`, held or not, one per event (for the copier)."""
        return self._frames[after:]

    async def ready(self, after: int, idle: float, *, held: bool = False) -> None:
        """Return once there is a frame after `after`, the log is closed, or `idle` seconds pass.

        With `held`, for the copier, a held final frame counts, and so does the log's end.
        """
        if held:
            if after < len(self._frames) or self.ending:
                return
        elif after < self._shown or self.closed:
            return
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

    async def wait(self, after: int, idle: float) -> tuple[bytes, int]:
        """Frames after `after` and the new cursor; waits up to `idle` seconds when there are none.

        Returns empty bytes on timeout (the caller pings) and when the log is
        closed and fully read (the caller ends).
        """
        await self.ready(after, idle)
        return self.read(after), self._shown

    def finished(self, cursor: int) -> bool:
        return self.closed and cursor >= self._shown

    def _add(self, event: Event) -> int:
        event_id = len(self._frames) + 1
        self._frames.append(encode_frame(event_id, encode_data(event)))
        return event_id

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _resolve(waiter)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
