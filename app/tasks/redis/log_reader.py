"""Reading a run's Stream from any instance: replay, follow, and its end even without a marker.

A reader on another instance replays with XREAD from the asked id, then
blocks on XREAD for more. When the run's claim is gone and no end marker
has come, it waits a short grace for the marker (the owner releases its
claim just before writing it); if none comes it reads how the turn is
stored (`stored`): a turn that ended (its end marker lost with a Redis
restart) ends the stream with its stored status, one still `running` is
followed on (its owner takes its claim back, or dies and the sweep marks
it), and one marked `interrupted` ends it so. Without `stored` the reader
ends it `interrupted` at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from redis.exceptions import RedisError

from app.core.events import CompleteEvent, RunStatus, encode_data
from app.core.frames import encode_frame
from app.tasks.base import TaskError

logger = logging.getLogger(__name__)

_GRACE_SECONDS = 2.0
"""How long a reader waits for the end marker after the run let go of its claim."""
_LOOK_SECONDS = 2.0
"""How often a reader of a quiet run looks whether the run still holds its claim."""
END = b"end"
"""The field that marks a run's last entry."""

Entry = tuple[bytes, dict[bytes, bytes]]
"""A Stream entry as redis-py returns it undecoded: (id, fields)."""


class StreamSource(Protocol):
    """What a reader asks of the run logs, so the reader holds no Redis client of its own."""

    async def entries_after(self, stream: str, after: int, block: float) -> list[Entry]: ...

    async def is_running(self, user_id: str, conversation_id: str, task_id: str) -> bool: ...

    async def settled(
        self, user_id: str, conversation_id: str, task_id: str
    ) -> RunStatus | None: ...


class RedisStreamReader:
    """An `EventLogReader` over one run's Stream; it ends at the end marker or the owner's death."""

    def __init__(self, logs: StreamSource, stream: str, run: tuple[str, str, str]) -> None:
        self._logs = logs
        self._stream = stream
        self._run = run
        """(user id, conversation id, task id) of the run read."""
        self._ended = False
        self._owner_gone: bool | None = None
        """Whether the run has let go of its claim, once looked at; None: look again."""

    async def wait(self, after: int, idle: float) -> tuple[bytes, int]:
        """The frames after `after`; once the owner let go, a short wait and then its end.

        The owner is looked at before the first block, so a resume of a run that
        is over or dead ends within the grace, not after a whole `idle`.
        """
        if self._ended:
            return b"", after
        try:
            if self._owner_gone is None:
                self._owner_gone = not await self._logs.is_running(*self._run)
            if not self._owner_gone:
                entries = await self._follow(after, idle)
                if entries is not None:
                    return self._take(entries, after)
                self._owner_gone = True
            entries = await self._logs.entries_after(self._stream, after, _GRACE_SECONDS)
            if not entries:
                status = await self._logs.settled(*self._run)
                if status is None:
                    self._owner_gone = None  # stored running: its owner lives, or the sweep ends it
                    return b"", after
                self._ended = True
                return _complete_frame(after + 1, status), after + 1
        except (RedisError, OSError, TaskError) as exc:
            # The stream ends without `complete`: the client reconnects with its last id.
            logger.warning(
                "stopped following run %s: Redis or the store failed (%s)",
                self._run[2],
                type(exc.__cause__ or exc).__name__,
            )
            self._ended = True
            return b"", after
        return self._take(entries, after)

    async def _follow(self, after: int, idle: float) -> list[Entry] | None:
        """The next entries, or none after `idle`; None once the run let go of its claim.

        A quiet run is looked at every `_LOOK_SECONDS`, so the death of its
        instance ends the resume within seconds, not after a whole ping interval.
        """
        loop = asyncio.get_running_loop()
        until = loop.time() + idle
        while True:
            block = min(_LOOK_SECONDS, max(until - loop.time(), 0.0))
            entries = await self._logs.entries_after(self._stream, after, block)
            if entries:
                return entries
            if not await self._logs.is_running(*self._run):
                return None
            if loop.time() >= until:
                return entries

    def finished(self, cursor: int) -> bool:
        return self._ended

    def end(self) -> None:
        self._ended = True

    def _take(self, entries: list[Entry], after: int) -> tuple[bytes, int]:
        frames: list[bytes] = []
        cursor = after
        for _, fields in entries:
            for name, frame in fields.items():
                if name == END:
                    self._ended = True
                    return b"".join(frames), cursor
                number = int(name)
                if number <= cursor:
                    continue  # a batch sent again after an outage, or one read in part
                if number != cursor + 1:
                    logger.warning(
                        "events after %d of run %s are no longer kept; ending its resume",
                        cursor,
                        self._run[2],
                    )
                    self._ended = True
                    return b"".join(frames), cursor
                frames.append(frame)
                cursor = number
        return b"".join(frames), cursor


def entry_id(raw: bytes) -> tuple[int, int]:
    """(last event, kind) from an entry id `L-0` or `L-1`."""
    number, _, kind = raw.partition(b"-")
    return int(number), int(kind)


def first_event(entry: Entry) -> int:
    """The first event an entry holds; for a final entry with no events, the one after it."""
    raw_id, fields = entry
    numbers = [int(name) for name in fields if name != END]
    return min(numbers) if numbers else entry_id(raw_id)[0] + 1


def _complete_frame(event_id: int, status: RunStatus) -> bytes:
    event = CompleteEvent(status=status, first_response_time=None, total_response_time=0)
    return encode_frame(event_id, encode_data(event))
