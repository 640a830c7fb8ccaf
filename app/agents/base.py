"""BaseAgent: the template every agent's turn follows (seed 003).

    begin()   save the question row (before the response starts, so a database
              that is down answers 503 and a rejected request writes nothing)
              (a first question's answer may start as its row is written: `AgentTurn.open`,
              its events held until the row is committed)
    start()   the turn as the runner drives it (`AgentTurn`, agents/agent_turn.py):
      events()    start -> load memory (and the user's: agents/recall.py) -> execute()
                  -> references -> follow-ups
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

A turn can outlive its instance (`carries_on`; app/service/takeover.py): one
whose instance died or drained goes on at another from its run's log
(`Turn.carried`), with no second `start`, a `thinking` line saying it moved,
and each tool call that was in flight closed as cut short (never run again).
An agent that carries on says how in `execute` (the ReAct loop asks the model
to continue its answer; deep research resumes its checkpoint; the deck builder
its build's step).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager

import orjson

from app.agents.agent_turn import AgentTurn, total_cost
from app.agents.approvals import ApprovalAnswer
from app.agents.tool_history import closed
from app.agents.turn import AgentCore, Turn, TurnState
from app.core.events import (
    ErrorEvent,
    Event,
    RunStatus,
)
from app.core.run import ConversationKey
from app.store.base import GoneTurn, StoreError, StoreUnavailable
from app.store.models import StoredTurn, TurnOutcome
from app.store.records import ModelUsage, ToolCall
from app.tasks.base import TaskError

log = logging.getLogger(__name__)

_STORE_FIRST_WAIT_SECONDS = 0.5
_STORE_MAX_WAIT_SECONDS = 2.0
"""The final store's waits between attempts double up to this: a database back from a restart
is used within two seconds, and fifty turns waiting cost the server 25 connection tries a second."""


class BaseAgent(ABC):
    agent_type: str = ""
    """Its kind: the class's own, or the registry entry's it is built for (which wins)."""
    carries_on: bool = False
    """Its `execute` goes on from `Turn.carried`: another instance may take its turns over."""
    overlaps: bool = False
    """Its answer may start while the question's row is written (`AgentTurn.open`): its
    `execute` needs nothing of the row (its id) before its first event."""

    def __init__(self, core: AgentCore) -> None:
        self.core = core

    async def begin(self, turn: Turn) -> None:
        """Store the question (status `running`) and read the memory with it, one round trip.

        The memory is the path to the turn's parent, nothing of the conversation's other branches.

        Raises `StoreError` when that fails.
        """
        turn.row_id, turn.earlier = await self.core.store.begin_turn(
            StoredTurn(
                session_id=turn.conversation_id,
                user_id=turn.user_id,
                agent_type=self.agent_type,
                question=turn.question,
                fileid=turn.file_id,
                model=turn.model_id,
                carry_on=turn.carry_on(),
            ),
            self.core.limits.memory_max_turns,
            turn.parent_id,
        )
        parent = turn.earlier[-1] if turn.earlier else None
        if parent is not None and parent.approval_id and parent.status == "paused":
            turn.earlier[-1] = await self._decline(turn, parent)

    async def _decline(self, turn: Turn, paused: StoredTurn) -> StoredTurn:
        """A message instead of a decision: the paused turn's pending call is rejected, the
        message its reason, and that turn ends `stopped` (the new one answers the message)."""
        store = self.core.store
        approval_id = paused.approval_id or ""
        decided = await store.decide(turn.user_id, turn.conversation_id, approval_id)
        if decided is None or decided.id is None or not decided.pending:
            return paused
        pending = decided.pending[0]
        answer = ApprovalAnswer(approval_id, "reject", message=turn.question)
        declined = [
            ToolCall(
                id=call.tool_call_id or "",
                name=call.tool_name or "",
                arguments=orjson.dumps(call.arguments).decode(),
                result=answer.declined(),
                is_error=True,
            )
            for call in (pending,)
            if call.kind == "tool"
        ]
        outcome = TurnOutcome.model_validate(
            {name: getattr(decided, name) for name in TurnOutcome.model_fields}
            | {"status": "stopped", "pending": [], "tools": [*decided.tools, *declined]}
        )
        await store.finish_turn(decided.id, outcome)
        return decided.model_copy(
            update={name: getattr(outcome, name) for name in TurnOutcome.model_fields}
        )

    async def go_on(self, turn: Turn) -> bool:
        """Take the decision `turn.answer` on the conversation's paused turn, and read its memory.

        The turn is `running` again, on this instance; False (nothing changed) when no
        paused turn of the conversation waits on that approval. Raises `StoreError`.
        """
        if turn.answer is None:
            return False
        store = self.core.store
        paused = await store.decide(
            turn.user_id, turn.conversation_id, turn.answer.approval_id, self.agent_type
        )
        if paused is None or paused.id is None:
            return False
        turn.resumed, turn.row_id = paused, paused.id
        models = self.core.models
        own = paused.model
        if not turn.model_named and models is not None and own and own in models.ids():
            turn.model_id = own
        if turn.tool_approval is None and paused.pending:
            turn.tool_approval = paused.pending[0].tool_approval
        turn.question, turn.file_id = paused.question, paused.fileid
        turn.earlier = await store.recent_turns(
            turn.user_id, turn.conversation_id, self.core.limits.memory_max_turns, paused.id
        )
        return True

    def resources(self) -> AbstractAsyncContextManager[object]:
        """What the agent holds for the app's life (a graph's checkpoint store, say).

        Opened in the lifespan before any run starts, closed after every run has ended.
        """
        return contextlib.nullcontext()

    async def forget(self, key: ConversationKey, gone: Sequence[GoneTurn]) -> None:
        """Drop what the agent keeps of a deleted conversation, whose turns were `gone`.

        One call per agent, so an agent that keeps things per conversation drops them all at
        once instead of reading what each deleted turn began.
        """
        await self.forget_turns(key, gone)

    async def forget_turns(self, key: ConversationKey, gone: Sequence[GoneTurn]) -> None:
        """Drop what the agent keeps of these deleted turns (a branch, or a whole conversation)."""
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
        spent = self.spent(turn, state)
        outcome = TurnOutcome(
            answer="".join(state.answer),
            thinking="".join(state.thinking),
            status=status,
            tools=closed(state.tool_calls),
            reference=[r.wire() for r in state.references.values()],
            recommend=state.recommend,
            files=state.files,
            plan=state.plan,
            deck=state.deck,
            pending=state.pending if status == "paused" else [],
            approval_id=state.pending[0].approval_id
            if status == "paused" and state.pending
            else None,
            error=error.code if error else None,
            error_message=error.message if error else None,
            first_response_time=state.first_response_ms,
            total_response_time=state.elapsed_ms(),
            prompt_tokens=state.usage.prompt_tokens,
            completion_tokens=state.usage.completion_tokens,
            cost_usd=total_cost(spent),
            usage_by_model=spent,
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

    def spent(self, turn: Turn, state: TurnState) -> list[ModelUsage]:
        """The turn's usage per model, priced; the turn's own model first."""
        models = self.core.models
        spent = [
            ModelUsage(
                model=model_id,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cost_usd=models.cost_usd(model_id, usage) if models is not None else None,
                estimated=usage.estimated,
            )
            for model_id, usage in state.usage_by_model(turn.model_id).items()
        ]
        return sorted(spent, key=lambda u: u.model != turn.model_id)

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
