"""The event log of one run: every event numbered, encoded once, readable by many.

The run appends; HTTP responses (the first one, and any resume) are readers
that hold a cursor. A reader that fell behind gets everything it missed in
one batch, so a slow client costs one write per wake-up, not per event.
Waiting uses plain futures and `call_later` timers rather than a task per
wait: this is the per-token path.

`RunLog` lives in the memory of the instance running the run. With several
instances, a `SharedRunLogs` backend (Redis Streams, in `redis.log`) copies
each log out of band so other instances can read it too; both kinds of
reader meet the `EventLogReader` protocol, so a response does not care
where the log it reads is kept. One instance alone has `LocalRunLogs`:
the same interface, with nothing to copy and no other instance to ask.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
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

    async def last_event_id(self, user_id: str, task_id: str) -> int | None:
        """The id of the newest event of that run copied out so far; None if none is kept."""
        ...

    async def history(self, user_id: str, task_id: str) -> list[bytes] | None:
        """Every frame of a run that has not ended, from its first event on: what another
        instance carries it on from (none yet: it starts over, as nobody saw any). None when
        the run ended, or is not kept whole."""
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

    async def last_event_id(self, user_id: str, task_id: str) -> int | None:
        return None

    async def history(self, user_id: str, task_id: str) -> list[bytes] | None:
        return None

    async def close(self) -> None:
        return None


class RunLog:
    """Frames numbered on from `base` (0: from 1); the last one may be held back (see `end`).

    A carried-on run's log starts at `base`, the last event its earlier instance copied
    out: its earlier events are read from the shared log, its new ones go on from there.

    Once `gate()`d, readers see only what the copier reports copied out (`copied`), so
    no client ever sees an event another instance could not carry the run on from;
    `ungate()` (the copy is failing) shows everything again.
    """

    def __init__(self, base: int = 0) -> None:
        self.base = base
        """Events up to this id are not kept here (a carried-on run's, before it moved)."""
        self._frames: list[bytes] = []
        self._shown = base
        """The last id readers may see: all but a final one `end()` holds back, and, gated,
        nothing past what is copied out."""
        self._held: int | None = None
        """The id of the final frame `end()` holds back until `close()`."""
        self._copied = base
        """The last id the copier reports copied out."""
        self._gated = False
        self._waiters: list[asyncio.Future[None]] = []
        self._copier_waiters: list[asyncio.Future[None]] = []
        """The copier's waits (`ready(held=True)`): a gated append wakes only those."""
        self.ending = False
        """No more events will come; the log may still hold its last one back."""
        self.handed_over = False
        """The run stopped here to go on at another instance: the log ends with no final event."""
        self.closed = False
        self.on_gated_append: Callable[[], None] | None = None
        """Called as a gated event is appended, so the copier's round trip is queued in the
        same pass of the loop, not the next one (each pass is milliseconds under load)."""

    @property
    def last_id(self) -> int:
        """The id of the last event appended, shown or held."""
        return self.base + len(self._frames)

    @property
    def shown_id(self) -> int:
        """The id of the last event readers may see."""
        return self._shown

    def append(self, event: Event) -> int:
        """Number, encode and store the event; wake the readers. Returns its id."""
        if self.ending:
            raise RuntimeError("append to an ended run log")
        event_id = self._add(event)
        if not self._gated:
            self._shown = event_id
            self._wake()
        else:
            if self.on_gated_append is not None:
                self.on_gated_append()
            _resolve_all(self._copier_waiters)
        return event_id

    def end(self, final: Event | None = None) -> None:
        """No more events; `final`, if any, is kept from readers until `close()`.

        The run's `complete` waits here while the log is copied where other
        instances read it: a client that reads `complete` may ask another
        instance next, which must find the whole run there.
        """
        if final is not None and not self.ending:
            self._held = self._add(final)
        self.ending = True
        self._wake()

    def hand_over(self) -> None:
        """No more events here: the run goes on at another instance, from what is copied out."""
        self.handed_over = True
        self.end()

    def gate(self) -> None:
        """From now on readers see an event only once `copied` says it is copied out."""
        self._gated = True

    @property
    def gated(self) -> bool:
        """Readers wait for the copy: each event reaches them one copy's round trip late."""
        return self._gated

    def copied(self, upto: int) -> None:
        """The events up to `upto` are copied out: gated readers may see them (not a held one)."""
        self._copied = max(self._copied, upto)
        if not self._gated:
            return
        visible = upto if self._held is None else min(upto, self._held - 1)
        if visible > self._shown:
            self._shown = visible
            self._wake()

    async def durable(self, idle: float = 1.0) -> None:
        """Return once the events appended so far are copied out (at once when not gated: no
        copy is waited for, or it is failing)."""
        target = self.last_id
        while self._gated and self._copied < target and not self.closed:
            await self.ready(self._copied, idle)

    def ungate(self) -> None:
        """Show everything appended (but a held final event): the copy cannot keep up."""
        self.copied(self.last_id)
        self._gated = False

    def close(self, *, show_rest: bool = True) -> None:
        """Show everything: readers drain what is left, then end.

        Without `show_rest` (a run that lost its claim to another instance) what is not
        shown yet never is: it is not in the shared log the run goes on from.
        """
        self.ending = self.closed = True
        if show_rest:
            self._shown = self.last_id
        self._wake()

    def read(self, after: int) -> bytes:
        """The frames readers may see after event id `after` (from `base` on), joined."""
        return b"".join(self._frames[max(after - self.base, 0) : self._shown - self.base])

    def frames_after(self, after: int) -> list[bytes]:
        """Every frame after event id `after`, held or not, one per event (for the copier)."""
        return self._frames[max(after - self.base, 0) :]

    async def ready(self, after: int, idle: float, *, held: bool = False) -> None:
        """Return once there is a frame after `after`, the log is closed, or `idle` seconds pass.

        With `held`, for the copier, a held (or not yet copied) frame counts, and so does
        the log's end.
        """
        if held:
            if after < self.last_id or self.ending:
                return
        elif after < self._shown or self.closed:
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        waiters = self._copier_waiters if held else self._waiters
        waiters.append(waiter)
        timer = loop.call_later(idle, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            if waiter in waiters:
                waiters.remove(waiter)

    async def wait(self, after: int, idle: float) -> tuple[bytes, int]:
        """Frames after `after` and the new cursor; waits up to `idle` seconds when there are none.

        Returns empty bytes on timeout (the caller pings) and when the log is
        closed and fully read (the caller ends).
        """
        await self.ready(after, idle)
        return self.read(after), max(self._shown, after)

    def finished(self, cursor: int) -> bool:
        return self.closed and cursor >= self._shown

    def _add(self, event: Event) -> int:
        event_id = self.last_id + 1
        self._frames.append(encode_frame(event_id, encode_data(event)))
        return event_id

    def _wake(self) -> None:
        _resolve_all(self._waiters)
        _resolve_all(self._copier_waiters)


def _resolve_all(waiters: list[asyncio.Future[None]]) -> None:
    pending = waiters[:]
    waiters.clear()
    for waiter in pending:
        _resolve(waiter)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
