"""Tool calls between us and a provider: assembled from fragments, and named both ways.

OpenAI-compatible servers and DashScope send `tool_calls` fragments keyed by
an index, interleaved when the model calls several tools; Anthropic sends
`input_json_delta` fragments keyed by the content block's index; Gemini sends
each call whole. All of them end up here, so a call is emitted once, complete,
in index order, with the arguments exactly as the model wrote them.

Arguments that are not a JSON object (cut short, a list, prose) give an empty
`input` and keep the text in `raw_input`, so the agent can report the bad call
to the model rather than crash.

A call's id is ours past `ChatModel.stream()` (`with_own_ids`), whatever the
provider sent; an adapter's `_stream()` speaks the provider's both ways: the
calls it yields carry the provider's id (or ""), and the messages it is given
name each call as the provider named it where that is safe (`with_provider_ids`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import orjson

from app.core.messages import ContentBlock, Msg, ToolResultBlock, ToolUseBlock, new_call_id
from app.core.responses import ChatResponse


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
        return ToolUseBlock(
            id=self.id,
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


def with_own_ids(chunk: ChatResponse) -> ChatResponse:
    """The chunk with each call under a new id of ours, the provider's kept as `provider_id`."""
    if any(isinstance(block, ToolUseBlock) for block in chunk.content):
        chunk.content = [
            replace(block, id=new_call_id(), provider_id=block.id or None)
            if isinstance(block, ToolUseBlock)
            else block
            for block in chunk.content
        ]
    return chunk


def with_provider_ids(messages: Sequence[Msg]) -> Sequence[Msg]:
    """The messages with each call (and its result) under the provider's id where that is safe.

    Safe means the id names that one call in the whole request: local servers
    number `call_0` in every answer and a turn's replayed calls share one
    message, so a repeated id would pair a result with the wrong call (and
    Anthropic refuses the request). Anywhere else ours goes, which every
    provider accepts: the calls it did not name, and those of stored turns.
    """
    uses = [b for m in messages for b in m.content if isinstance(b, ToolUseBlock)]
    taken = Counter(b.provider_id for b in uses if b.provider_id)
    taken.update(b.id for b in uses)
    sent = {b.id: b.provider_id for b in uses if b.provider_id and taken[b.provider_id] == 1}
    if not sent:
        return messages
    return [Msg(m.role, [_named(block, sent) for block in m.content]) for m in messages]


def _named(block: ContentBlock, sent: dict[str, str]) -> ContentBlock:
    if isinstance(block, ToolUseBlock) and block.id in sent:
        return replace(block, id=sent[block.id])
    if isinstance(block, ToolResultBlock) and block.tool_use_id in sent:
        return replace(block, tool_use_id=sent[block.tool_use_id])
    return block
