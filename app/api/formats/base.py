"""Re-encode a run's log, frame by frame, into another wire format.

The log holds our SSE frames already encoded (`id: N` then one `data:` line,
`app.core.events.encode_frame`); a `TranslatedLog` decodes each one back into
its typed event and hands it to a format's `Translator`, and is itself an
`EventLogReader`, so the one
SSE response we have (`EventStreamResponse`: pings, the client leaving, the
end of the log) serves every format.

A translator keeps state across events (an open text message, the plan so
far), so a reader that rejoins mid-run replays the log from its start with
the output hidden up to the event the client already has: the state is the
same as the first reader's, and so is every byte after that point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from app.agents.registry import AgentEntry
from app.api.deps import Services
from app.api.envelope import ApiError
from app.core.events import Event
from app.core.frames import decode_frames, joined_deltas

if TYPE_CHECKING:
    from app.tasks.log import EventLogReader


class Translator(Protocol):
    def translate(self, event_id: int, event: Event) -> bytes:
        """The bytes this format sends for one of our events; empty when it sends nothing."""
        ...


class TranslatedLog:
    """An `EventLogReader` whose frames are another format's encoding of the inner log's."""

    def __init__(self, inner: EventLogReader, translator: Translator, *, hide_through: int = 0):
        self._inner = inner
        self._translator = translator
        self._hide_through = hide_through
        """Events up to this id are translated (for the state) but not sent."""

    async def wait(self, after: int, idle: float) -> tuple[bytes, int]:
        data, cursor = await self._inner.wait(after, idle)
        if not data:
            return data, cursor
        out = [
            encoded
            for event_id, event in self._merged(decode_frames(data))
            if (encoded := self._translator.translate(event_id, event))
            and event_id > self._hide_through
        ]
        return b"".join(out), cursor

    def _merged(self, frames: list[tuple[int, Event]]) -> list[tuple[int, Event]]:
        """Runs of text (or thinking) deltas read at once as one delta, with the last one's id.

        A client that fell behind, or a model faster than the network, then costs one
        event per wake-up rather than one per token: the formats' encoders, unlike our
        own frames, are built per event. Never merged across what a rejoining client
        already has, so the first event it is sent is still the one after its id.
        """
        merged: list[tuple[int, Event]] = []
        for event_id, event in frames:
            if merged:
                last_id, last = merged[-1]
                same_side = (last_id > self._hide_through) == (event_id > self._hide_through)
                joined = joined_deltas(last, event) if same_side else None
                if joined is not None:
                    merged[-1] = (event_id, joined)
                    continue
            merged.append((event_id, event))
        return merged

    def finished(self, cursor: int) -> bool:
        return self._inner.finished(cursor)


def agent_entry(services: Services, kind: str) -> AgentEntry:
    """The app's agent for a format's `{kind}` path segment; 404 for none."""
    entry = services.agents.get(kind)
    if entry is None:
        raise ApiError(404, f"No agent of kind {kind!r}")
    return entry
