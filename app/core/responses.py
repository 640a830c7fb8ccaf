"""What a model stream yields: `ChatResponse` chunks, and a notice when it retries.

A stream is a sequence of chunks. Text and thinking blocks in a chunk are
deltas; a `ToolUseBlock` appears once, complete, when its arguments are fully
assembled; the last chunk carries `usage` and `finish_reason`. `accumulate`
folds the chunks into the whole response.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from app.core.messages import (
    ContentBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error"]


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    """True when counted locally with tiktoken because the provider reported nothing."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )


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


def accumulate(chunks: list[ChatResponse]) -> ChatResponse:
    """Merge streamed chunks: adjacent text/thinking deltas join, tool calls keep their order."""
    out = ChatResponse()
    for chunk in chunks:
        out.id = chunk.id or out.id
        for block in chunk.content:
            last = out.content[-1] if out.content else None
            if isinstance(block, TextBlock) and isinstance(last, TextBlock):
                last.text += block.text
            elif isinstance(block, ThinkingBlock) and isinstance(last, ThinkingBlock):
                last.thinking += block.thinking
                last.signature = block.signature or last.signature
            elif isinstance(block, TextBlock):
                out.content.append(TextBlock(block.text))
            elif isinstance(block, ThinkingBlock):
                out.content.append(ThinkingBlock(block.thinking, block.signature))
            elif isinstance(block, ToolUseBlock | RedactedThinkingBlock):
                out.content.append(block)
        if chunk.usage is not None:
            out.usage = chunk.usage
        if chunk.finish_reason is not None:
            out.finish_reason = chunk.finish_reason
    return out
