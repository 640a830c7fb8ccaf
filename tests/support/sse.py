"""Read an SSE response the way the original web client does: `data:` lines as JSON."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson

Event = dict[str, Any]


async def events(response: httpx.Response) -> AsyncIterator[Event]:
    """Yield each event's JSON object, with its `id:` added as `_id`; stops after `complete`."""
    event_id: int | None = None
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            event_id = int(line[4:])
        elif line.startswith("data: "):
            event: Event = orjson.loads(line[6:])
            event["_id"] = event_id
            yield event
            if event["type"] == "complete":
                return


async def collect(response: httpx.Response) -> list[Event]:
    return [event async for event in events(response)]


def types(evts: list[Event]) -> list[str]:
    """Event types in order, with runs of text/thinking deltas folded into one."""
    out: list[str] = []
    for event in evts:
        kind = event["type"]
        if kind in ("text", "thinking") and out and out[-1] == kind:
            continue
        out.append(kind)
    return out


def text_of(evts: list[Event], kind: str = "text") -> str:
    return "".join(e["content"] for e in evts if e["type"] == kind)
