"""BaseAgent: the template every agent's turn follows (seed 003).

    begin()   save the question row (before the response starts, so a database
              that is down answers 503 and a rejected request writes nothing)
    start()   the turn as the runner drives it (`AgentTurn`):
      events()    start -> load memory -> execute() -> references -> follow-ups
      conclude()  store the answer (one update) -> `complete`

Subclasses implement only `execute()`, an async generator of events, and
own how it ends: `completed`, or `paused` when the agent waits for the
user (`state.pause()`). The runner owns the rest: a stop cancels
`events()` and the turn is stored `stopped` (or `interrupted` when the
instance shuts down); a model error or a bug is stored `failed`, with an
`error` event before `complete`. So a turn is never lost and a stream
never hangs. Tool calls cut short are stored closed, with a synthetic result.

While it runs, the answer so far is saved every `partial_save_seconds`
(when something new came), so an instance that dies loses at most that
much. `complete` means stored: while the database is unreachable the final
store is retried for up to `store_retry_seconds` (long enough for a
restart or a failover), the stream saying meanwhile, in a `thinking` line,
that it is saving; the run's log (copied to Redis when configured) holds
the answer all that time, and the outcome is kept aside (`core.unstored`,
in Redis) for any instance to store should this one never manage to. If
the database is still away then, the turn ends `error{STORE_FAILED}` and
`complete{failed}`, never `completed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Literal

import httpx2 as httpx

from app.agents.memory import load_memory
from app.agents.plan_record import PLAN_EVENTS, record_plan
from app.agents.recommend import suggest_follow_ups
from app.agents.tool_history import closed
from app.config import Settings
from app.core.events import (
    CompleteEvent,
    ErrorEvent,
    Event,
    FileEvent,
    RecommendEvent,
    Reference,
    ReferenceEvent,
    RunStatus,
    RunUsage,
    StartEvent,
    TextEvent,
    ThinkingEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from app.core.messages import Msg
from app.core.observe import NO_OBSERVER, AgentObserver
from app.core.responses import Usage
from app.core.run import Conclusion, ConversationKey, NeverStopped, Notice, StopSignal
from app.core.tools import GenerateOptions
from app.documents.library import DocumentLibrary
from app.llm.base import ChatModel
from app.llm.errors import ModelError, user_message
from app.llm.tokens import TokenCounter
from app.store.base import SessionStore, StoreError, StoreUnavailable
from app.store.db import Database
from app.store.models import StoredTurn, TurnOutcome
from app.store.records import PlanRound, ToolCall, TurnFile
from app.tasks.base import TaskError
from app.tasks.unstored import NoUnstoredTurns, UnstoredTurns
from app.tools.base import Tool
from app.tools.mcp.toolbox import McpToolbox

log = logging.getLogger(__name__)

_STORE_FIRST_WAIT_SECONDS = 0.5
_STORE_MAX_WAIT_SECONDS = 2.0
"""The final store's waits between attempts double up to this: a database back from a restart
is used within two seconds, and fifty turns waiting cost the server 25 connection tries a second."""
SAVING_NOTICE = "The database is not answering: the answer is kept and saved once it is back.\n"
_SHOWN = (TextEvent, ThinkingEvent)
"""Events whose content is the answer or the thinking (a tuple: `A | B` is built per call)."""

AgentOutcome = Literal["completed", "paused"]


@dataclass(frozen=True, slots=True)
class AgentSettings:
    memory_max_turns: int = 10
    memory_max_tokens: int = 6000
    max_rounds: int = 5
    recommendations: bool = True
    tool_result_display_chars: int = 2000
    partial_save_seconds: float = 5.0
    store_retry_seconds: float = 120.0
    """How long the final store retries an unreachable database before the turn ends failed."""

    @classmethod
    def from_settings(cls, settings: Settings) -> AgentSettings:
        return cls(
            memory_max_turns=settings.memory_max_turns,
            memory_max_tokens=settings.memory_max_tokens,
            max_rounds=settings.react_max_rounds,
            recommendations=settings.recommendations_enabled,
            tool_result_display_chars=settings.tool_result_display_chars,
            partial_save_seconds=settings.partial_save_seconds,
            store_retry_seconds=settings.store_retry_seconds,
        )


@dataclass(slots=True)
class AgentCore:
    """What every agent shares for the app's life; built once in the lifespan.

    What several agents use is built here once (the web search); an agent's
    own dependencies (a template library) are built by its factory in the registry.
    """

    model: ChatModel
    store: SessionStore
    tokens: TokenCounter
    http: httpx.AsyncClient
    """The pooled client for tools' HTTP calls (not the model's)."""
    limits: AgentSettings
    documents: DocumentLibrary | None = None
    """Uploaded and generated files, for the agents that read or make them."""
    database: Database | None = None
    """The app's database, for an agent that keeps state of its own (the deck builds)."""
    mcp: McpToolbox | None = None
    """MCP servers' tools, offered to the agent kinds each server is configured for."""
    search: Tool | None = None
    """The web search every searching agent offers (`WEB_SEARCH_PROVIDER`); None: none set."""
    observer: AgentObserver = NO_OBSERVER
    """The service's telemetry (tool calls, store retries, the trace id in `start`)."""
    unstored: UnstoredTurns = field(default_factory=NoUnstoredTurns)
    """Where a turn's outcome waits while its final store fails, for any instance to store."""


@dataclass(slots=True)
class Turn:
    key: ConversationKey
    """The conversation and its owner, as the run's claim has them."""
    question: str
    task_id: str
    file_id: str | None = None
    row_id: int = 0
    earlier: list[StoredTurn] = field(default_factory=list)
    """The conversation's latest turns before this one, read as its question was stored."""
    options: GenerateOptions = field(default_factory=lambda: GenerateOptions())

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
    answer: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    references: dict[str, Reference] = field(default_factory=dict)
    recommend: list[str] = field(default_factory=list)
    files: list[TurnFile] = field(default_factory=list)
    plan: list[PlanRound] = field(default_factory=list)
    """A planning agent's rounds, from its `plan`, `step` and `critique` events."""
    usage: Usage = field(default_factory=Usage)
    outcome: AgentOutcome = "completed"
    first_response_ms: int | None = None
    changes: int = 0
    """Counts what the periodic partial save would store, so an unchanged turn is not written."""

    def pause(self) -> None:
        """End the turn `paused`: the agent waits for the user (a question, a confirmation)."""
        self.outcome = "paused"

    def add_usage(self, usage: Usage) -> None:
        """Every model call of the turn adds here, the follow-ups' and a stopped one's too."""
        self.usage = self.usage + usage

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
                ToolCall(id=event.tool_call_id, name=event.tool_name, arguments=event.arguments)
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

    def tool_names(self) -> list[str]:
        return list(dict.fromkeys(call.name for call in self.tool_calls))

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)


class AgentFailure(Exception):
    """An agent's own failure (a plan still invalid after a retry, a render past its limit).

    The turn ends `failed` with an `error` whose text comes from the fixed
    table of user messages under `code`; `detail` is the agent's own short
    description, never upstream text.
    """

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(detail or code)
        self.code = code
        self.detail = detail


class BaseAgent(ABC):
    agent_type: str = ""
    """Its kind: the class's own, or the registry entry's it is built for (which wins)."""

    def __init__(self, core: AgentCore) -> None:
        self.core = core

    async def begin(self, turn: Turn) -> None:
        """Store the question (status `running`) and read the memory with it, one round trip.

        Raises `StoreError` when that fails.
        """
        turn.row_id, turn.earlier = await self.core.store.begin_turn(
            StoredTurn(
                session_id=turn.conversation_id,
                user_id=turn.user_id,
                agent_type=self.agent_type,
                question=turn.question,
                fileid=turn.file_id,
            ),
            self.core.limits.memory_max_turns,
        )

    def resources(self) -> AbstractAsyncContextManager[object]:
        """What the agent holds for the app's life (a graph's checkpoint store, say).

        Opened in the lifespan before any run starts, closed after every run has ended.
        """
        return contextlib.nullcontext()

    async def forget(self, key: ConversationKey) -> None:
        """Drop what the agent keeps of a deleted conversation beside its turns."""
        return None

    async def ping(self) -> None:
        """Raise `StoreError` unless what `resources()` holds answers (for `/ready`)."""
        return None

    def start(self, turn: Turn) -> AgentTurn:
        """The stored turn (`begin()` first) as the runner drives it."""
        return AgentTurn(self, turn)

    @abstractmethod
    def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        """Produce the turn's events; `state.memory` holds the earlier turns as messages."""

    async def save_partials(self, turn: Turn, state: TurnState, ended: asyncio.Event) -> None:
        """Until `ended`, store the turn so far every period in which something new came.

        A task of its own rather than a check on each event, so a burst before
        a long silence is saved too, and the event path never waits on SQL.
        """
        period = self.core.limits.partial_save_seconds
        saved = 0
        while not ended.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(period):
                    await ended.wait()
            if ended.is_set() or state.changes == saved:
                continue
            saved = state.changes
            try:
                await self.core.store.save_partial(
                    turn.row_id,
                    "".join(state.answer),
                    "".join(state.thinking),
                    closed(state.tool_calls),
                )
            except StoreError as exc:
                log.warning(
                    "could not save the partial answer of conversation %s: %s",
                    turn.conversation_id,
                    exc,
                )

    async def store(
        self,
        turn: Turn,
        state: TurnState,
        status: RunStatus,
        error: ErrorEvent | None,
        waiting: Callable[[], object],
    ) -> bool:
        """Write the answer in one update; False if the database never came back.

        An unreachable database is retried, the waits doubling up to two seconds,
        for `store_retry_seconds`; `waiting()` is called once, at the first failure,
        so the stream can say it is saving. Any other store error is not retried:
        the same statement would fail the same way.
        """
        outcome = TurnOutcome(
            answer="".join(state.answer),
            thinking="".join(state.thinking),
            status=status,
            tools=closed(state.tool_calls),
            reference=[r.wire() for r in state.references.values()],
            recommend=state.recommend,
            files=state.files,
            plan=state.plan,
            error=error.code if error else None,
            first_response_time=state.first_response_ms,
            total_response_time=state.elapsed_ms(),
            prompt_tokens=state.usage.prompt_tokens,
            completion_tokens=state.usage.completion_tokens,
        )
        began = time.monotonic()
        deadline = began + self.core.limits.store_retry_seconds
        wait = _STORE_FIRST_WAIT_SECONDS
        attempt = 0
        while True:
            attempt += 1
            try:
                await asyncio.shield(self.core.store.finish_turn(turn.row_id, outcome))
            except StoreError as exc:
                left = deadline - time.monotonic()
                if not isinstance(exc, StoreUnavailable) or left <= 0:
                    log.error(
                        "could not store turn %s of conversation %s (%d attempts in %.1fs),"
                        " it ends failed: %s",
                        turn.row_id,
                        turn.conversation_id,
                        attempt,
                        time.monotonic() - began,
                        exc,
                    )
                    return False
                if attempt == 1:
                    waiting()
                    await self._keep_aside(turn, outcome)
                self.core.observer.store_retried()
                log.warning(
                    "could not store turn %s of conversation %s, retrying in %.1fs: %s",
                    turn.row_id,
                    turn.conversation_id,
                    min(wait, left),
                    exc,
                )
                await asyncio.sleep(min(wait, left))
                wait = min(wait * 2, _STORE_MAX_WAIT_SECONDS)
                continue
            if attempt > 1:
                log.info(
                    "stored turn %s of conversation %s after %.1fs of retries",
                    turn.row_id,
                    turn.conversation_id,
                    time.monotonic() - began,
                )
                with contextlib.suppress(TaskError):  # a sweep finds it stored, and drops it
                    await self.core.unstored.drop(turn.row_id)
            return True

    async def _keep_aside(self, turn: Turn, outcome: TurnOutcome) -> None:
        """Keep the outcome where another instance finds it, should this one never store it."""
        try:
            await self.core.unstored.keep(turn.row_id, outcome)
        except TaskError as exc:
            log.warning(
                "could not keep the answer of turn %s aside while the database is away: %s",
                turn.row_id,
                exc,
            )


class AgentTurn:
    """One turn of an agent in the runner's two phases (`RunProgram` in tasks/runs.py)."""

    def __init__(self, agent: BaseAgent, turn: Turn) -> None:
        self.agent = agent
        self.turn = turn
        self.state = TurnState()
        self._error: ErrorEvent | None = None
        self._ended = asyncio.Event()
        self._saver: asyncio.Task[None] | None = None

    async def events(self, stop: StopSignal) -> AsyncIterator[Event]:
        agent, turn, state, core = self.agent, self.turn, self.state, self.agent.core
        state.stop = stop
        yield StartEvent(
            turn.conversation_id,
            turn.row_id,
            agent.agent_type,
            turn.task_id,
            trace_id=core.observer.trace_id(),
        )
        self._saver = asyncio.create_task(agent.save_partials(turn, state, self._ended))
        limits = core.limits
        try:
            state.memory = await load_memory(
                core.store,
                core.tokens,
                turn.user_id,
                turn.conversation_id,
                turn.earlier,
                limits.memory_max_tokens,
            )
            async for event in agent.execute(turn, state):
                state.observe(event)
                yield event
            if state.references:
                yield ReferenceEvent.of(state.references.values())
            if limits.recommendations and state.outcome == "completed":
                state.recommend = await suggest_follow_ups(
                    core.model, turn.question, "".join(state.answer), state.add_usage
                )
                if state.recommend:
                    yield RecommendEvent.of(state.recommend)
        except ModelError as exc:
            self._error = ErrorEvent(exc.code, user_message(exc.code), exc.describe())
        except AgentFailure as exc:
            self._error = ErrorEvent(exc.code, user_message(exc.code), exc.detail)
        except Exception as exc:
            log.exception("agent %s failed in %s", agent.agent_type, turn.conversation_id)
            self._error = ErrorEvent(
                "INTERNAL_ERROR", user_message("INTERNAL_ERROR"), type(exc).__name__
            )

    async def conclude(self, stopped: RunStatus | None, notice: Notice) -> Conclusion:
        """Store the turn with its status, then say how it ended (`failed` if it was not stored)."""
        state, error = self.state, self._error
        self._ended.set()
        if self._saver is not None:
            await self._saver
        status: RunStatus = stopped or ("failed" if error else state.outcome)
        events: list[Event] = [error] if error else []
        if not await self.agent.store(
            self.turn, state, status, error, lambda: notice(ThinkingEvent(SAVING_NOTICE))
        ):
            status = "failed"
            limit = self.agent.core.limits.store_retry_seconds
            events.append(
                ErrorEvent(
                    "STORE_FAILED",
                    user_message("STORE_FAILED"),
                    f"the database did not take the answer within {limit:g}s",
                )
            )
        complete = CompleteEvent(
            status=status,
            first_response_time=state.first_response_ms,
            total_response_time=state.elapsed_ms(),
            tools=state.tool_names(),
            usage=RunUsage(
                state.usage.prompt_tokens, state.usage.completion_tokens, state.usage.estimated
            ),
        )
        return Conclusion(complete, events)
