"""What a turn is while it runs: its request, its state, what every agent shares, how it fails.

`AgentCore` is built once in the lifespan; a `Turn` is one stored question;
`TurnState` gathers what the turn produced, for the one final store;
`Carried` is what a turn begun on another instance had done when it moved here;
`AgentFailure` ends a turn `failed` with a code the user is shown.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

import httpx2

from app.agents.approvals import ApprovalAnswer, ApprovalMode, ApprovalPolicy
from app.agents.plan_record import PLAN_EVENTS, record_plan
from app.config import SettingsPart
from app.core.events import (
    DeckEvent,
    Event,
    FileEvent,
    RecommendEvent,
    Reference,
    ReferenceEvent,
    TextEvent,
    ThinkingEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from app.core.messages import Msg
from app.core.observe import NO_OBSERVER, AgentObserver
from app.core.responses import Usage
from app.core.run import ConversationKey, NeverStopped, StopSignal
from app.core.tools import GenerateOptions
from app.documents.library import DocumentLibrary
from app.documents.user_memory import Recalled, UserMemory
from app.llm.base import ChatModel
from app.llm.catalog import Role
from app.llm.model_entry import DEFAULT_MODEL_ID
from app.llm.models import ModelCatalog
from app.llm.tokens import TokenCounter
from app.store.base import TurnStore
from app.store.db import Database
from app.store.models import StoredTurn
from app.store.project_models import StoredProject
from app.store.records import CarryOn, DeckRecord, Pending, PlanRound, ToolCall, TurnFile
from app.store.user_memory import TurnMemory
from app.tasks.unstored import NoUnstoredTurns, UnstoredTurns
from app.tools.base import Tool
from app.tools.fetch_page import FetchPage
from app.tools.mcp.toolbox import McpToolbox

_SHOWN = (TextEvent, ThinkingEvent)
"""Events whose content is the answer or the thinking (a tuple: `A | B` is built per call)."""

AgentOutcome = Literal["completed", "paused"]


class AgentSettings(
    SettingsPart,
    renamed={"max_rounds": "react_max_rounds", "recommendations": "recommendations_enabled"},
):
    turn_takeovers: int
    """How many times a turn may move to another instance (a turn past it is not handed over)."""
    memory_max_turns: int
    memory_max_tokens: int
    max_rounds: int
    recommendations: bool
    tool_result_display_chars: int
    partial_save_seconds: float
    store_retry_seconds: float
    """How long the final store retries an unreachable database before the turn ends failed."""


@dataclass(slots=True)
class AgentCore:
    """What every agent shares for the app's life; built once in the lifespan.

    What several agents use is built here once (the web search); an agent's
    own dependencies (a template library) are built by its factory in the registry.
    """

    model: ChatModel
    store: TurnStore
    tokens: TokenCounter
    http: httpx2.AsyncClient
    """The pooled client for tools' HTTP calls (not the model's)."""
    limits: AgentSettings
    documents: DocumentLibrary
    """Uploaded and generated files, for the agents that read or make them."""
    database: Database
    """The app's database, for an agent that keeps state of its own (the deck builds)."""
    mcp: McpToolbox | None = None
    """MCP servers' tools, offered to the agent kinds each server is configured for."""
    search: Tool | None = None
    """The web search every searching agent offers (`WEB_SEARCH_PROVIDER`); None: none set."""
    fetch_page: FetchPage | None = None
    """The page reader the web-search, deep, skills and host agents offer; None: `FETCH_ENABLED`
    is off."""
    observer: AgentObserver = NO_OBSERVER
    """The service's telemetry (tool calls, store retries, the trace id in `start`)."""
    unstored: UnstoredTurns = field(default_factory=NoUnstoredTurns)
    """Where a turn's outcome waits while its final store fails, for any instance to store."""
    models: ModelCatalog | None = None
    """Every configured model by id (`MODELS`); None: `model` alone, as `default`."""

    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """Which tool calls wait for the user's yes (`TOOL_APPROVAL`)."""
    user_memory: UserMemory | None = None
    """Users' memory across conversations (app/agents/recall.py); None: `MEMORY_ENABLED` off."""

    def role_model(self, role: Role, model_id: str) -> str:
        """The id deep research's `role` takes in a turn of `model_id` (`DEEP_*_MODEL`)."""
        return model_id if self.models is None else self.models.role(role, model_id)

    def memory_tokens(self, model_id: str) -> int:
        """The memory a turn of `model_id` gets: `MEMORY_MAX_TOKENS`, within half the
        model's context window where the catalog gives one (the rest is for the prompt,
        the tools, the question and the answer)."""
        entry = None if self.models is None else self.models.spec.entry(model_id)
        window = entry.context_window if entry is not None else None
        budget = self.limits.memory_max_tokens
        return budget if window is None else min(budget, window // 2)

    def image_side(self, model_id: str) -> int:
        """The longest side of a picture the model sends: 0 unless the catalog marks it
        `vision` and its adapter sends pictures."""
        entry = None if self.models is None else self.models.spec.entry(model_id)
        if entry is None or not entry.vision:
            return 0
        return self.model_for(model_id).image_max_side

    def model_for(self, model_id: str) -> ChatModel:
        """The model a turn (or a role of it) named: `model` is the catalog's `default`."""
        if self.models is None or model_id == DEFAULT_MODEL_ID:
            return self.model
        return self.models.get(model_id)


@dataclass(frozen=True, slots=True)
class InProject:
    """The project a turn is in, as its start read it."""

    project: StoredProject
    file_ids: tuple[str, ...] = ()
    """The files attached to it: `search_project_files` searches them."""


@dataclass(frozen=True, slots=True)
class Carried:
    """A turn begun on another instance (which died, or drained) and carried on here.

    `events` are its run's log as copied out before it moved, in order: the text, the
    finished tool calls and the one in flight, the plan; the run goes on after them.
    """

    events: tuple[Event, ...]
    asked: datetime
    """When its question came (the row's), so the turn's times count from there."""


@dataclass(slots=True)
class Turn:
    key: ConversationKey
    """The conversation and its owner, as the run's claim has them."""
    question: str
    task_id: str
    file_id: str | None = None
    parent_id: int | None = None
    """The turn it follows: 0 for none (a new first question), None for the active leaf."""
    regenerates: int | None = None
    """The turn this one answers again (stream field `regenerate`): an agent that kept that
    turn's work may reuse it (deep research writes only a new report)."""
    row_id: int = 0
    earlier: list[StoredTurn] = field(default_factory=list)
    """The conversation's latest turns before this one, read as its question was stored."""
    options: GenerateOptions = field(default_factory=lambda: GenerateOptions())
    model_id: str = DEFAULT_MODEL_ID
    """The catalog id of the model that answers (the request's `model`, or the kind's)."""
    model_named: bool = False
    """The request named `model_id`; else a decided turn goes on with its own model."""
    tool_approval: ApprovalMode | None = None
    """The request's `toolApproval`; None: the settings' policy alone."""
    review_plan: bool = False
    """Deep research: each round's plan waits for the user's decision (`reviewPlan`)."""
    template_file_id: str | None = None
    """PPT builder: the uploaded .pptx a new deck is built on (`templateFileId`)."""
    resumed: StoredTurn | None = None
    """The paused turn this run goes on with (its row is `row_id`), decided by `answer`."""
    answer: ApprovalAnswer | None = None
    project: InProject | None = None
    """The conversation's project: its instructions, defaults and files."""
    temporary: bool = False
    """`memory: "off"`: the turn neither reads nor writes the user's memory."""
    remembered: TurnMemory | None = None
    """The user's memory as the turn's start read it, with its project; None: `recall` reads
    it (a turn carried on from another instance)."""
    carried: Carried | None = None
    """What the turn had done on the instance it moved from; None: it began here."""
    takeovers: int = 0
    """How many times the turn moved to another instance before this run."""
    webhook: str | None = None
    """The URL told when the turn ends (the request's, or `WEBHOOK_URL`); None: none."""

    def carry_on(self) -> CarryOn | None:
        """What an instance that carries the turn on needs of its request beyond the row (the
        project is the conversation's: it reads that itself)."""
        if (
            self.tool_approval is None
            and self.webhook is None
            and not self.review_plan
            and not self.temporary
        ):
            return None
        return CarryOn(
            tool_approval=self.tool_approval,
            webhook=self.webhook,
            review_plan=self.review_plan,
            temporary=self.temporary,
        )

    @property
    def user_id(self) -> str:
        return self.key.user_id

    @property
    def conversation_id(self) -> str:
        return self.key.conversation_id


@dataclass(slots=True)
class TurnState:
    """What a run accumulates; `execute()` adds usage and references here, and may pause."""

    started: float = field(default_factory=time.perf_counter)
    stop: StopSignal = field(default_factory=NeverStopped)
    """Whether a stop was asked: a long step may check it and end early."""
    memory: list[Msg] = field(default_factory=list)
    recalled: Recalled | None = None
    """The user's memory items shown to the turn (app/agents/recall.py); None: it reads none."""
    answer: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    references: dict[str, Reference] = field(default_factory=dict)
    recommend: list[str] = field(default_factory=list)
    files: list[TurnFile] = field(default_factory=list)
    plan: list[PlanRound] = field(default_factory=list)
    """A planning agent's rounds, from its `plan`, `step` and `critique` events."""
    deck: DeckRecord | None = None
    """The deck builder's last `deck` event: what a reopened conversation shows."""
    usage: Usage = field(default_factory=Usage)
    by_model: dict[str, Usage] = field(default_factory=dict)
    """`usage` per catalog id; "" for calls of a model that did not say (the turn's own)."""
    outcome: AgentOutcome = "completed"
    pending: list[Pending] = field(default_factory=list)
    """What a paused turn waits for the user's decision on (a tool call, a plan)."""
    first_response_ms: int | None = None
    changes: int = 0
    """Counts what the periodic partial save would store, so an unchanged turn is not written."""

    @classmethod
    def going_on(cls, paused: StoredTurn) -> TurnState:
        """The state of a paused turn that goes on: what it had produced when it paused."""
        return cls(
            answer=[paused.answer or ""],
            thinking=[paused.thinking or ""],
            tool_calls=list(paused.tools),
            references={
                r["url"]: Reference(r["url"], r.get("title", ""), r.get("content", ""))
                for r in paused.reference
                if r.get("url")
            },
            files=list(paused.files),
            plan=list(paused.plan),
            deck=paused.deck,
            usage=Usage(paused.prompt_tokens, paused.completion_tokens),
            first_response_ms=paused.first_response_time,
        )

    @classmethod
    def carried_on(cls, carried: Carried) -> TurnState:
        """The state of a turn carried on from another instance: what its log shows."""
        elapsed = max(datetime.now(UTC) - carried.asked, timedelta())
        state = cls(started=time.perf_counter() - elapsed.total_seconds())
        for event in carried.events:
            state.observe(event)
            if isinstance(event, ReferenceEvent):
                state.add_references(event.references())
            elif isinstance(event, RecommendEvent):
                state.recommend = event.questions()
        return state

    def pause(self) -> None:
        """End the turn `paused`: the agent waits for the user (a question, a confirmation).

        Unless the agent says what waits (a tool call, a plan), it is the question the
        answer so far puts to the user, which the next message answers."""
        self.outcome = "paused"
        if not self.pending:
            self.pending = [Pending(kind="question", message="".join(self.answer))]

    def add_usage(self, usage: Usage) -> None:
        """Every model call of the turn adds here, the follow-ups' and a stopped one's too."""
        self.usage = self.usage + usage
        self.by_model[usage.model] = self.by_model.get(usage.model, Usage()) + usage

    def add_usage_of(self, other: TurnState) -> None:
        """A sub-run's usage (a research task's), model by model."""
        for usage in other.by_model.values():
            self.add_usage(usage)

    def usage_by_model(self, turn_model: str) -> dict[str, Usage]:
        """`by_model` with untold calls counted as the turn's own model's."""
        merged: dict[str, Usage] = {}
        for model_id, usage in self.by_model.items():
            key = model_id or turn_model
            merged[key] = merged.get(key, Usage()) + usage
        return merged

    def add_references(self, refs: list[Reference]) -> None:
        for ref in refs:
            self.references.setdefault(ref.url, ref)

    def observe(self, event: Event) -> None:
        self.changes += 1
        if isinstance(event, _SHOWN):
            if self.first_response_ms is None:
                self.first_response_ms = self.elapsed_ms()
            (self.answer if isinstance(event, TextEvent) else self.thinking).append(event.content)
        elif isinstance(event, ToolStartEvent):
            self.tool_calls.append(
                ToolCall(
                    id=event.tool_call_id,
                    name=event.tool_name,
                    arguments=event.arguments,
                    task_id=event.task_id,
                )
            )
        elif isinstance(event, ToolEndEvent):
            for index in range(len(self.tool_calls) - 1, -1, -1):
                call = self.tool_calls[index]
                if call.id == event.tool_call_id:
                    self.tool_calls[index] = call.model_copy(
                        update={"result": event.result, "is_error": event.is_error}
                    )
                    break
        elif isinstance(event, FileEvent):
            self.files.append(TurnFile.model_validate(event))
        elif isinstance(event, PLAN_EVENTS):
            record_plan(self.plan, event)
        elif isinstance(event, DeckEvent):
            self.deck = DeckRecord.model_validate(event, from_attributes=True)

    def tool_names(self) -> list[str]:
        return list(dict.fromkeys(call.name for call in self.tool_calls))

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)


class AgentFailure(Exception):
    """An agent's own failure (a plan still invalid after a retry, a render past its limit).

    The turn ends `failed` with an `error` whose text is `message` where the
    agent wrote one (which step failed and why, in the user's words), else the
    fixed one of `code`; `detail` is the agent's own short description, never
    upstream text.
    """

    def __init__(self, code: str, detail: str = "", message: str = "") -> None:
        super().__init__(detail or code)
        self.code = code
        self.detail = detail
        self.message = message
