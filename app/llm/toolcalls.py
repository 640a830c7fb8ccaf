"""Assemble tool calls whose arguments stream in fragments, for every adapter.

OpenAI-compatible servers and DashScope send `tool_calls` fragments keyed by
an index, interleaved when the model calls several tools; Anthropic sends
`input_json_delta` fragments keyed by the content block's index; Gemini sends
each call whole. All of them end up here, so a call is emitted once, complete,
in index order, with the arguments exactly as the model wrote them.

Arguments that are not a JSON object (cut short, a list, prose) give an empty
`input` and keep the text in `raw_input`, so the agent can report the bad call
to the model rather than crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import uuid4

import orjson

from app.core.messages import ToolUseBlock


@dataclass(slots=True)
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    signature: str | None = None

    def block(self) -> ToolUseBlock:
        raw = "".join(self.arguments)
        try:
            parsed = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError:
            parsed = {}
        # An id is needed to send the result back; some local servers leave it out.
        return ToolUseBlock(
            id=self.id or f"call_{uuid4().hex[:24]}",
            name=self.name,
            input=parsed if isinstance(parsed, dict) else {},
            raw_input=raw,
            signature=self.signature,
        )


class ToolCallBuffer:
    """The calls of one streamed answer, by index, until the answer ends."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[int, _PendingCall] = {}

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(
        self,
        index: int | None,
        *,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
        signature: str | None = None,
    ) -> None:
        """Add one fragment; the first id and name a call gets are the ones it keeps.

        Some servers leave `index` out: a fragment with an id then starts a new
        call, and one without continues the latest.
        """
        if index is None:
            index = len(self._calls) if call_id or not self._calls else max(self._calls)
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _PendingCall()
        call.id = call.id or call_id or ""
        call.name = call.name or name or ""
        call.signature = call.signature or signature
        if arguments:
            call.arguments.append(arguments)

    def next_index(self) -> int:
        return max(self._calls, default=-1) + 1

    def blocks(self) -> list[ToolUseBlock]:
        return [self._calls[i].block() for i in sorted(self._calls)]
