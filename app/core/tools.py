"""Tool descriptions the model sees, and per-call generation options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict


@dataclass(frozen=True, slots=True)
class ToolSchema:
    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    """A JSON Schema object describing the arguments."""


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """Ask the provider to hold the answer to a JSON shape (its native structured output).

    Each adapter sends it its own way (OpenAI-compatible `response_format`, an
    Anthropic forced tool, Gemini `responseJsonSchema`, DashScope's JSON mode);
    the answer comes back as text either way.
    """

    name: str
    """What the shape is called on the wire (`[A-Za-z0-9_-]`, at most 64 characters)."""
    schema: dict[str, Any] | None
    """The JSON Schema of the answer; None asks only for some JSON object."""


ToolChoice = Literal["auto", "none", "required"] | str
"""`auto`, `none`, `required`, or the name of one tool the model must call."""


class GenerateOptions(TypedDict, total=False):
    """Per-call options; anything left out takes the provider's or the settings' default."""

    temperature: float
    max_tokens: int
    top_p: float
    tool_choice: ToolChoice
    timeout: float
    """Seconds allowed between two chunks (and before the first)."""
    thinking_budget: int
    """Tokens the model may reason with before answering, 0 for none, where the API takes one."""
    response_format: ResponseFormat
    """Answer with JSON of this shape (`app/llm/structured.py` sets it)."""
