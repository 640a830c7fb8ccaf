"""The typed values a turn or a file carries: statuses, and the records its JSON columns hold.

They travel three ways in one shape: in events as the turn runs, as JSON in
the `ai_session` row (`JsonList` in models.py), and on the wire in the
history, camelCase by `WireModel`'s alias alone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.core.wire import WireModel

TurnStatus = Literal["running", "completed", "stopped", "failed", "paused", "interrupted"]


class ToolCall(WireModel):
    """One tool call of a turn; `result` is None while it runs (or if it never finished)."""

    id: str
    name: str
    arguments: str = ""
    result: str | None = None
    is_error: bool = False


class TurnFile(WireModel):
    """A file the turn made (a deck, a report), as its `file` event and the history show it."""

    file_id: str
    name: str
    url: str
    size: int
    mime_type: str


class PlanTask(WireModel):
    """One task of a research round, as it stood when the turn was stored."""

    id: str
    title: str
    depends_on: list[str] = Field(default_factory=list)
    status: str = "pending"
    summary: str = ""
    sources: list[dict[str, str]] = Field(default_factory=list)
    """`{url, title}` of what the task read."""


class PlanCritique(WireModel):
    passed: bool
    feedback: str = ""


class PlanRound(WireModel):
    """One round of a deep research turn: its plan, and the critique that closed it."""

    round: int
    tasks: list[PlanTask]
    critique: PlanCritique | None = None


FileStatus = Literal["processing", "ready", "failed"]
FileSource = Literal["upload", "generated"]


class ModelUsage(WireModel):
    """What one model of a turn spent: tokens summed over its calls, and their price."""

    model: str
    """The model's catalog id (`MODELS`; `default` for the `LLM_*` one)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    """At the model's prices; None when it has none."""
    estimated: bool = False
    """Some of it was counted with tiktoken: a call cut short, or a provider that reported none."""
