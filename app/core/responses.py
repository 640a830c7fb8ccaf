"""What a model stream yields: `ChatResponse` chunks, and a notice when it retries.

A stream is a sequence of chunks. Text and thinking blocks in a chunk are
deltas; a `ToolUseBlock` appears once, complete, when its arguments are fully
assembled; the last chunk carries `usage` and `finish_reason`. An
`Accumulator` folds the chunks into the whole response as they come.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from app.core.messages import (
    ContentBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)

_Block = TypeVar("_Block", bound=ContentBlock)

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error"]


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    """True when counted locally with tiktoken because the provider reported nothing."""
    model: str = ""
    """The catalog id of the model that spent it; empty: not said (or several)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
            _same_model(self, other),
        )


def _same_model(one: Usage, other: Usage) -> str:
    """The model of a sum: the one both name (an empty sum names none), else none."""
    if not one.model or not other.model or one.model == other.model:
        return one.model or other.model
    return ""


@dataclass(slots=True)
class ChatResponse:
    id: str = ""
    content: list[ContentBlock] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: FinishReason | None = None


@dataclass(slots=True)
class Retrying:
    """The model call failed before its first chunk and will be tried again after `delay`."""

    attempt: int
    delay: float
    reason: str


ModelEvent = ChatResponse | Retrying


def accumulate(chunks: Iterable[ChatResponse]) -> ChatResponse:
    """Merge streamed chunks: adjacent text/thinking deltas join, tool calls keep their order."""
    merged = Accumulator()
    for chunk in chunks:
        merged.add(chunk)
    return merged.result()


class Accumulator:
    """Merges chunks as they stream, so a call keeps its answer's text, not every chunk of it.

    A chunk, its content list and its blocks cost about 250 bytes per token
    beyond the token's text; kept until the call ends, that was a quarter of
    an open stream's memory (bench/README.md). Deltas of the block being
    written are kept as strings and joined once, when the block ends or the
    result is asked for.
    """

    def __init__(self) -> None:
        self._out = ChatResponse()
        self._parts: list[str] = []
        """The deltas of the last block, when it is text or thinking, joined by `_settle`."""

    def add(self, chunk: ChatResponse) -> None:
        out = self._out
        out.id = chunk.id or out.id
        for block in chunk.content:
            last = out.content[-1] if out.content else None
            if isinstance(block, TextBlock):
                if not isinstance(last, TextBlock):
                    self._start(TextBlock(""))
                self._parts.append(block.text)
            elif isinstance(block, ThinkingBlock):
                if not isinstance(last, ThinkingBlock):
                    last = self._start(ThinkingBlock("", block.signature))
                self._parts.append(block.thinking)
                last.signature = block.signature or last.signature
            elif isinstance(block, ToolUseBlock | RedactedThinkingBlock):
                self._start(block)
        if chunk.usage is not None:
            out.usage = chunk.usage
        if chunk.finish_reason is not None:
            out.finish_reason = chunk.finish_reason

    def result(self) -> ChatResponse:
        """The response so far, a copy: later chunks still add to this one, not to it."""
        self._settle()
        out = self._out
        content = [
            replace(b) if isinstance(b, TextBlock | ThinkingBlock) else b for b in out.content
        ]
        return ChatResponse(out.id, content, out.usage, out.finish_reason)

    def _start(self, block: _Block) -> _Block:
        self._settle()
        self._parts = []
        self._out.content.append(block)
        return block

    def _settle(self) -> None:
        if not self._parts:
            return
        joined = "".join(self._parts)
        self._parts = [joined]
        last = self._out.content[-1]
        if isinstance(last, TextBlock):
            last.text = joined
        elif isinstance(last, ThinkingBlock):
            last.thinking = joined
