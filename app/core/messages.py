"""The conversation vocabulary every layer speaks: messages made of content blocks.

Agents build `Msg` lists, formatters turn them into a vendor's request, and
adapters turn the vendor's stream back into `ChatResponse` chunks made of the
same blocks. Plain slotted dataclasses, not pydantic models: they are built
per streamed chunk, where validation would cost more than it catches.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import uuid4

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"


@dataclass(slots=True)
class ThinkingBlock:
    """Reasoning text; providers that sign their reasoning keep it in `signature`."""

    thinking: str
    signature: str | None = None
    type: Literal["thinking"] = "thinking"


@dataclass(slots=True)
class RedactedThinkingBlock:
    """Reasoning the provider encrypted (Anthropic's `redacted_thinking`): never shown,
    but sent back verbatim with the response it belongs to, which the provider checks."""

    data: str
    type: Literal["redacted_thinking"] = "redacted_thinking"


@dataclass(slots=True)
class ImageBlock:
    """A picture the user attached, sent to a vision model beside the question.

    `data` is already fit to the provider's limits (agents/pictures.py): the
    formatters only encode it in their wire's form (a data URL, base64).
    """

    data: bytes
    media_type: str
    """`image/png` or `image/jpeg`."""
    width: int
    height: int
    name: str = ""
    type: Literal["image"] = "image"

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.base64()}"


def new_call_id() -> str:
    """A tool call's id of our own: `call_` and 24 hex digits, unique in its turn (and beyond)."""
    return f"call_{uuid4().hex[:24]}"


@dataclass(slots=True)
class ToolUseBlock:
    """A complete tool call: adapters emit it only once its arguments are assembled.

    `id` is ours (`new_call_id()`), given by `ChatModel.stream()` whatever the
    provider sent: providers reuse ids across answers (`call_0` in each), repeat
    one within an answer, or send none (Gemini), and a turn's events, history
    and approvals need one id per call. The provider's own stays in `provider_id`,
    only to name the call back to it (app/llm/toolcalls.py).
    """

    id: str
    name: str
    input: dict[str, Any]
    raw_input: str = ""
    """The arguments exactly as the model produced them (kept for display and replay)."""
    signature: str | None = None
    """An opaque token some providers attach to a call and require back with it (Gemini)."""
    provider_id: str | None = None
    """The id the provider gave the call; None when it gave none (or the call is not a model's)."""
    type: Literal["tool_use"] = "tool_use"


@dataclass(slots=True)
class ToolResultBlock:
    tool_use_id: str
    name: str
    output: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


ContentBlock = (
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ImageBlock | ToolUseBlock | ToolResultBlock
)


@dataclass(slots=True)
class Msg:
    """One message. Tool results travel in a `tool` message, one block per call."""

    role: Role
    content: list[ContentBlock] = field(default_factory=list)

    @classmethod
    def text(cls, role: Role, text: str) -> Msg:
        return cls(role=role, content=[TextBlock(text)])

    def text_content(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def images(self) -> list[ImageBlock]:
        return [b for b in self.content if isinstance(b, ImageBlock)]

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]
