"""A turn of an agent as the runner drives it (`AgentTurn`): its events, then its conclusion.

Apart from `BaseAgent` (agents/base.py), which is the template each agent fills in:
this is the runner's side of a turn, the same for every agent (the memory read, the
first question's overlap with its row's write, the periodic saves, a turn that moved,
the final store).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING

from app.agents.memory import load_memory
from app.agents.recall import recall
from app.agents.recommend import suggest_follow_ups
from app.agents.tool_history import CUT_SHORT_RESULT, closed
from app.agents.turn import AgentFailure, Turn, TurnState
from app.core.events import (
    CompleteEvent,
    ErrorEvent,
    Event,
    ModelSpend,
    RecommendEvent,
    ReferenceEvent,
    RunStatus,
    RunUsage,
    StartEvent,
    TextEvent,
    ThinkingEvent,
    ToolEndEvent,
)
from app.core.run import Conclusion, Notice, StopSignal
from app.llm.errors import ModelError, user_message
from app.store.base import StoreError
from app.store.records import ModelUsage

if TYPE_CHECKING:
    from app.agents.base import BaseAgent

log = logging.getLogger(__name__)

SAVING_NOTICE = "The database is not answering: the answer is kept and saved once it is back.\n"
MOVED_NOTICE = "This turn moved to another server and goes on from where it was.\n"


class AgentTurn:
    """One turn of an agent in the runner's two phases (`RunProgram` in tasks/runs.py)."""

    def __init__(self, agent: BaseAgent, turn: Turn) -> None:
        self.agent = agent
        self.turn = turn
        if turn.carried is not None:
            self.state = TurnState.carried_on(turn.carried)
        elif turn.resumed is not None:
            self.state = TurnState.going_on(turn.resumed)
        else:
            self.state = TurnState()
        self._error: ErrorEvent | None = None
        self._ended = asyncio.Event()
        self._saver: asyncio.Task[None] | None = None
        self._answer: AsyncGenerator[Event] | None = None
        self._ahead: asyncio.Task[Event | None] | None = None
        self._taken: list[Event] = []
        """The answer's events taken while the question was stored (`open()`)."""
        self._stored = False
        """The question's row is committed: `events()` has begun."""

    def open(self) -> None:
        """Start the answer (the memory, the model call) while the question's row is written.

        What it shows meanwhile is held until `events()` yields it after `start`: no event
        leaves before its question is stored, and nothing acts before then (taking stops at
        the first event that is not text or thinking, a tool's start say).
        """
        self._answer = self._answering()
        self._ahead = asyncio.create_task(self._take_ahead(self._answer))

    async def abandon(self) -> None:
        """The question was not stored after `open()`: cancel the answer it started."""
        if self._ahead is not None:
            self._ahead.cancel()
            with contextlib.suppress(BaseException):
                await self._ahead
        if self._answer is not None:
            await self._answer.aclose()

    async def _take_ahead(self, answer: AsyncIterator[Event]) -> Event | None:
        """Keep the answer's text and thinking in `_taken` until the row is stored; the event
        that came after (None: the answer ended), which `events()` yields next."""
        while True:
            event = await anext(answer, None)
            if event is None or self._stored or not isinstance(event, TextEvent | ThinkingEvent):
                return event
            self._taken.append(event)

    async def events(self, stop: StopSignal) -> AsyncGenerator[Event]:
        agent, turn, state, core = self.agent, self.turn, self.state, self.agent.core
        state.stop = stop
        self._stored = True
        if turn.carried is None:
            yield StartEvent(
                turn.conversation_id,
                turn.row_id,
                agent.agent_type,
                turn.task_id,
                trace_id=core.observer.trace_id(),
            )
        else:
            for event in _moved_here(state):
                state.observe(event)
                yield event
        self._saver = asyncio.create_task(agent.save_partials(turn, state, self._ended))
        answer, ahead = self._answer or self._answering(), self._ahead
        try:
            for event in self._taken:
                yield event
            if ahead is not None and (following := await ahead) is not None:
                yield following
            async for event in answer:
                yield event
        except ModelError as exc:
            self._error = ErrorEvent(exc.code, exc.user_text, exc.describe())
        except AgentFailure as exc:
            self._error = ErrorEvent(exc.code, exc.message or user_message(exc.code), exc.detail)
        except Exception as exc:
            log.exception("agent %s failed in %s", agent.agent_type, turn.conversation_id)
            self._error = ErrorEvent(
                "INTERNAL_ERROR", user_message("INTERNAL_ERROR"), type(exc).__name__
            )
        finally:
            if ahead is not None:
                ahead.cancel()

    async def _answering(self) -> AsyncGenerator[Event]:
        """Load the memory, then the agent's events, its sources and follow-ups."""
        agent, turn, state, core = self.agent, self.turn, self.state, self.agent.core
        # A turn that moved after its answer was whole (its sources or follow-ups were out)
        # has nothing left to do but be stored.
        answered = turn.carried is not None and any(
            isinstance(e, ReferenceEvent | RecommendEvent) for e in turn.carried.events
        )
        state.memory, state.recalled = await asyncio.gather(
            load_memory(
                core.store,
                core.tokens,
                turn.earlier,
                core.memory_tokens(turn.model_id),
            ),
            recall(core, turn),
        )
        if not answered:
            async for event in agent.execute(turn, state):
                state.observe(event)
                yield event
            if state.references:
                yield ReferenceEvent.of(state.references.values())
        if core.limits.recommendations and state.outcome == "completed" and not state.recommend:
            state.recommend = await suggest_follow_ups(
                core.model_for(turn.model_id),
                turn.question,
                "".join(state.answer),
                state.add_usage,
            )
            if state.recommend:
                yield RecommendEvent.of(state.recommend)

    def movable(self) -> bool:
        """A turn goes on elsewhere when its agent carries on, it is not a decision on a paused
        turn (its earlier part is not in this run's log), and it has moves left."""
        agent, turn = self.agent, self.turn
        moves_left = turn.takeovers < agent.core.limits.turn_takeovers
        return agent.carries_on and turn.resumed is None and moves_left

    async def moved(self, handed_over: bool) -> None:
        """Stop the periodic saves; handed over, save the answer so far once more (the history
        shows it while the turn moves: the next instance goes on from the run's log)."""
        self._ended.set()
        if self._saver is not None:
            await self._saver
        if not handed_over:
            return
        state, store = self.state, self.agent.core.store
        try:
            await store.save_partial(
                self.turn.row_id,
                "".join(state.answer),
                "".join(state.thinking),
                closed(state.tool_calls),
            )
        except StoreError as exc:
            log.warning("could not save turn %s as it moved: %s", self.turn.row_id, exc)

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
        spent = self.agent.spent(self.turn, state)
        complete = CompleteEvent(
            status=status,
            first_response_time=state.first_response_ms,
            total_response_time=state.elapsed_ms(),
            tools=state.tool_names(),
            usage=RunUsage(
                state.usage.prompt_tokens,
                state.usage.completion_tokens,
                state.usage.estimated,
                model=self.turn.model_id,
                cost_usd=total_cost(spent),
                by_model=(
                    {
                        u.model: ModelSpend(u.prompt_tokens, u.completion_tokens, u.cost_usd)
                        for u in spent
                    }
                    if len(spent) > 1
                    else None
                ),
            ),
        )
        return Conclusion(complete, events)


def _moved_here(state: TurnState) -> list[Event]:
    """What a turn carried on here shows first: that it moved, and each tool call that was in
    flight closed as cut short (it is never run again: the model reads that its outcome is
    unknown)."""
    events: list[Event] = [ThinkingEvent(MOVED_NOTICE)]
    events += [
        ToolEndEvent(call.name, call.id, CUT_SHORT_RESULT, True, task_id=call.task_id)
        for call in state.tool_calls
        if call.result is None
    ]
    return events


def total_cost(spent: list[ModelUsage]) -> float | None:
    """The turn's cost: the priced models' sum; None when no model that served it has prices."""
    costs = [u.cost_usd for u in spent if u.cost_usd is not None]
    return round(sum(costs), 8) if costs else None
