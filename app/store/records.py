"""The typed values a turn or a file carries: statuses, and the records its JSON columns hold.

They travel three ways in one shape: in events as the turn runs, as JSON in
the `ai_session` row (`JsonList` in columns.py), and on the wire in the
history, camelCase by `WireModel`'s alias alone.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from app.core.events import OmittedWhenNone
from app.core.wire import WireModel

TurnStatus = Literal["running", "completed", "stopped", "failed", "paused", "interrupted"]
Rating = Literal["up", "down"]
"""A user's verdict on an answer."""


class ToolCall(WireModel):
    """One tool call of a turn; `result` is None while it runs (or if it never finished)."""

    id: str
    name: str
    arguments: str = ""
    result: str | None = None
    is_error: bool = False
    task_id: OmittedWhenNone[str] = None
    """The deep-research task that made the call (its `tool_start.taskId`); absent otherwise."""


class TurnFile(WireModel):
    """A file the turn made (a deck, a report), as its `file` event and the history show it."""

    file_id: str
    name: str
    url: str
    size: int
    mime_type: str
    status: Literal["failed"] | None = Field(default=None, exclude_if=lambda v: v is None)
    """Only for a file the agent could not make (then `error` says why); else left out."""
    error: str | None = Field(default=None, exclude_if=lambda v: v is None)


class DeckSlideRecord(WireModel):
    title: str
    page_type: str = ""


class DeckVersionRecord(WireModel):
    version: int
    name: str
    url: str


class DeckRecord(WireModel):
    """A deck turn's last `deck` event, kept so a reopened conversation shows its slides."""

    stage: Literal["outline", "ready"]
    version: int
    title: str
    template: str
    slides: list[DeckSlideRecord] = Field(default_factory=list)
    versions: list[DeckVersionRecord] = Field(default_factory=list)
    thumbnails: list[str] = Field(default_factory=list)
    """Download URLs of one PNG per slide, when the service could draw them."""
    pdf: str | None = None
    """The version's PDF, as the `deck` event gave it."""
    pdf_error: str | None = None
    """Why that version has no PDF, as the `deck` event gave it."""


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


PendingKind = Literal["tool", "plan", "question"]


class Pending(WireModel):
    """What a `paused` turn waits for the user's decision on (API.md, "Asking before acting").

    Stored with the turn before the `approval` event goes out, so the decision can be
    taken on any instance, after a restart too; `later` keeps the calls of the same
    model round that have not run yet, checked in turn once this one is decided. A
    question the agent asked (`kind: question`) has no approval: the next message answers.
    """

    approval_id: str | None = None
    kind: PendingKind
    tool_call_id: str | None = None
    tool_name: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    plan: list[PlanTask] = Field(default_factory=list)
    """A plan review's tasks (`kind: plan`)."""
    message: str | None = None
    """The question put to the user (`kind: question`)."""
    later: list[ToolCall] = Field(default_factory=list)
    """The other calls of the round, not run yet (a tool approval)."""
    tool_approval: Literal["ask", "auto"] | None = None
    """The turn's `toolApproval`, kept for the rest of it (a decision may name another)."""


class CarryOn(WireModel):
    """What a running turn's request asked beyond its row: what another instance that
    carries the turn on (its own died, or drained) must honour as this one would."""

    tool_approval: Literal["ask", "auto"] | None = None
    """The request's `toolApproval`: an acting tool still waits for the user's yes."""
    webhook: str | None = None
    """The URL called once the turn ends (the request's `webhook`, or `WEBHOOK_URL`)."""
    review_plan: bool = False
    """Deep research: each round's plan waits for the user's decision (`reviewPlan`)."""
    temporary: bool = False
    """`memory: "off"`: the turn neither reads nor writes the user's memory."""


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
