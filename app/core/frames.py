"""Our SSE frames: `id: N` then one `data:` line per event, encoded once and read back.

A run's log holds these bytes; every reader of the log shares them. The other
wire formats read them back into typed events (`decode_frames`), joining runs of
deltas so a reader that fell behind costs one event per wake-up, not per token.
"""

from __future__ import annotations

from app.core.events import Event, TextEvent, ThinkingEvent, decode_event


def encode_frame(event_id: int, data: bytes) -> bytes:
    """One SSE frame: `id:` then a single `data:` line (JSON never holds a raw newline)."""
    return b"id: %d\ndata: %s\n\n" % (event_id, data)


def decode_frames(data: bytes) -> list[tuple[int, Event]]:
    """Frames back into (event id, event): the inverse of `encode_frame`, joined."""
    frames: list[tuple[int, Event]] = []
    for frame in data.split(b"\n\n"):
        if not frame:
            continue
        head, _, body = frame.partition(b"\ndata: ")
        frames.append((int(head.removeprefix(b"id: ")), decode_event(body)))
    return frames


PING_FRAME = b": ping\n\n"


def joined_deltas(first: Event, second: Event) -> Event | None:
    """Two deltas of one text (answer or reasoning) as one; None for any other pair.

    A reader that fell behind sends a run of deltas as one: the other formats'
    encoders are built per event, so this costs one event per wake-up, not per token.
    """
    if isinstance(first, TextEvent) and isinstance(second, TextEvent):
        return TextEvent(first.content + second.content)
    if isinstance(first, ThinkingEvent) and isinstance(second, ThinkingEvent):
        return ThinkingEvent(first.content + second.content)
    return None
