"""A run's log read as batches of our events, for the surfaces that translate them (A2A, MCP).

The streams send the log's frames as they are; A2A and MCP need the events
themselves, in the batches the log hands out, so runs of deltas can be joined.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from app.core.events import Event
from app.core.frames import decode_frames

if TYPE_CHECKING:
    from app.tasks.log import EventLogReader

WAIT_SECONDS = 15.0
"""How long one read of a run's log waits before it looks again (a run may be silent)."""


async def event_batches(reader: EventLogReader, after: int) -> AsyncGenerator[list[Event]]:
    """The log's events after `after`, in the batches they come in, until it ends."""
    cursor = after
    while True:
        data, cursor = await reader.wait(cursor, WAIT_SECONDS)
        if data:
            yield [event for _, event in decode_frames(data)]
        elif reader.finished(cursor):
            return
