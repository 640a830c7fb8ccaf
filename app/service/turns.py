"""Starting a turn: claim the conversation, store the question, launch the run.

This is the one place that orders those steps, so that a busy conversation
(409) or a dependency that is down (503) is answered before any byte of the
stream and before anything is written, and a claim is never left behind by
a request that failed half-way. The claim is asked for as the request's
checks read the database (`claim`), so the two round trips overlap; a
request its checks refuse gives the claim back (`withdraw`).

A first question (nothing above it) launches its run as its row is written: the
model is asked meanwhile, and the run shows nothing until the row is committed
(`_overlapped`). A later turn's prompt needs the turns above it, which on
PostgreSQL come back with the question's INSERT, so it launches once stored.

A busy conversation is handled as the request asks (`Strategy`, LangGraph's
"double texting"): `reject` answers 409; `interrupt` stops the running turn
(stored `stopped`) and starts the new one; `rollback` does the same and
deletes the stopped turn's row; `enqueue` opens the stream at once with a
`queued` event and starts the turn when the ones before it have ended. A
queued turn stores nothing until it starts: a stop, or its client leaving
with `onDisconnect=cancel`, takes it out of the queue and ends its stream
with `complete{status: stopped}`.

It refuses with `app.service.errors`: `NotAvailable` (no such agent here),
`Busy` (a turn already runs on the conversation), `Unavailable` (the
database or the task backend is down), `Draining` (this instance is going
away: a load balancer sends the request to another).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, Protocol

from app.agents.approvals import ApprovalAnswer, ApprovalMode
from app.agents.base import BaseAgent
from app.agents.on_demand import OnDemandAgents
from app.agents.turn import InProject, Turn
from app.core.drain import Drain
from app.core.events import CompleteEvent, ErrorEvent, QueuedEvent
from app.core.run import ConversationKey
from app.core.tools import GenerateOptions
from app.llm.model_entry import DEFAULT_MODEL_ID
from app.service.errors import Busy, Draining, NotAvailable, Unavailable
from app.store.base import GoneTurn, StoreError, TurnStore
from app.store.user_memory import TurnMemory
from app.tasks.base import (
    Claim,
    Claims,
    ConversationQueue,
    RunsBoard,
    TaskBackendUnavailable,
    TaskError,
    Ticket,
)
from app.tasks.runs import OnEnd, Run, RunProgram, RunRegistry, Storing

Launch = Callable[[RunProgram], Run]

log = logging.getLogger(__name__)

TASKS_DOWN = "Service unavailable: the task backend (Redis) is unavailable"
DATABASE_DOWN = "Service unavailable: the database is unavailable"
TASKS_UNREADABLE = "Service unavailable: the task backend (Redis) is down"
"""What reading the runs (a list, a resume) answers while Redis is away."""
UNDECIDABLE = "No paused turn of this conversation waits on that approvalId (or it is decided)"
Strategy = Literal["reject", "enqueue", "interrupt", "rollback"]
"""What a new message does when its conversation is busy."""

_TAKE_OVER_ATTEMPTS = 3
"""Stops an interrupting request sends before it gives up (409): others may take the gap."""
_QUEUE_RECHECK_SECONDS = 1.0
"""Longest a queued turn sleeps without looking at the queue; a release wakes it sooner."""
DRAINING_RETRY_SECONDS = 1
"""`Retry-After` of a turn refused by a draining instance: another one takes it at once."""
DRAINING = "This instance is shutting down (a deploy): send the request again"


@dataclass(frozen=True, slots=True)
class Claimed:
    """What a turn's claim met (`TurnService.claim`): `taken`, or the conversation busy."""

    agent: BaseAgent
    claim: Claim
    ticket: Ticket
    """The turn as listed with its claim (a take-over lists it again)."""
    taken: bool


class RunObserver(Protocol):
    """Sees each run from its launch to its end (telemetry: a span, counters)."""

    def launch(self, kind: str, turn: Turn, program: RunProgram, launch: Launch) -> Run:
        """Start the run with `launch(program)`, or with a program that wraps `program`.

        Called in the request's context: what is current here is what the run's
        background task inherits.
        """
        ...


class TurnService:
    def __init__(
        self,
        agents: OnDemandAgents,
        *,
        claims: Claims,
        queue: ConversationQueue,
        board: RunsBoard,
        runs: RunRegistry,
        ttl: float,
        store: TurnStore,
        stop_wait: float,
        observer: RunObserver,
        starting: int,
        drain: Drain | None = None,
    ) -> None:
        self._agents = agents
        self._drain = drain or Drain()
        self._claims = claims
        self._queue = queue
        self._board = board
        self._runs = runs
        self._ttl = ttl
        self._observer = observer
        self._store = store
        """Where `rollback` deletes the turn it stopped, and paused turns are read."""
        self._stop_wait = stop_wait
        self._waiting: set[asyncio.Task[None]] = set()
        """Queued turns waiting for their conversation, cancelled at shutdown."""
        self._starting = asyncio.Semaphore(starting)
        """Turns storing their question and launching at once (`MAX_STARTING_TURNS`)."""

    def kinds(self) -> frozenset[str]:
        """The agents this service runs; a stream for any other kind answers 501."""
        return self._agents.kinds()

    async def ping(self) -> None:
        """Raise `StoreError` unless each agent's own store answers (deep research's saver)."""
        for agent in self._agents.built():
            await agent.ping()

    async def forget(self, user_id: str, conversation_id: str, gone: Sequence[GoneTurn]) -> None:
        """A conversation was deleted, with these turns: each agent drops what it kept of it.

        Only the kinds that answered them can have kept anything: the others are not
        built for it (a rollback or a deleted chat conversation loads no LangGraph).
        """
        key = ConversationKey(user_id, conversation_id)
        for agent in await self._agents.of_kinds(turn.agent_type for turn in gone):
            await agent.forget(key, gone)

    async def forget_turns(
        self, user_id: str, conversation_id: str, gone: Sequence[GoneTurn]
    ) -> None:
        """Turns were deleted (a branch): the agents that answered them drop what they kept."""
        key = ConversationKey(user_id, conversation_id)
        for agent in await self._agents.of_kinds(turn.agent_type for turn in gone):
            await agent.forget_turns(key, gone)

    def claim(
        self, kind: str, user_id: str, conversation_id: str, question: str
    ) -> asyncio.Task[Claimed]:
        """Begin a turn's claim on its conversation (listing it as running in the same step),
        to run while the caller reads and checks the rest of the request: the task backend's
        round trip then overlaps the database's read instead of following it. Whatever the
        checks refuse gives the claim back (`withdraw`). A draining instance refuses here,
        before anything is read.

        The task raises `NotAvailable` (no such agent here) or `Unavailable`."""
        if self._drain.draining:
            raise Draining(DRAINING, DRAINING_RETRY_SECONDS)
        return asyncio.create_task(self._claim(kind, user_id, conversation_id, question))

    async def withdraw(self, claiming: asyncio.Task[Claimed]) -> None:
        """The request was refused after its claim began: give the claim back if it was
        taken. What the claim itself met is not answered: the refusal is."""
        try:
            claimed = await claiming
        except Exception:
            return
        if claimed.taken:
            with contextlib.suppress(TaskBackendUnavailable):
                await self._claims.release(claimed.claim)

    async def start(
        self,
        claimed: Claimed,
        question: str,
        file_id: str | None = None,
        options: GenerateOptions | None = None,
        on_end: OnEnd | None = None,
        strategy: Strategy = "reject",
        parent_id: int | None = None,
        regenerates: int | None = None,
        model_id: str = DEFAULT_MODEL_ID,
        model_named: bool = False,
        tool_approval: ApprovalMode | None = None,
        answer: ApprovalAnswer | None = None,
        review_plan: bool = False,
        template_file_id: str | None = None,
        project: InProject | None = None,
        temporary: bool = False,
        webhook: str | None = None,
        remembered: TurnMemory | None = None,
        first: bool = False,
    ) -> Run:
        """Store the question and launch under the claim (`claim`), or, the conversation
        busy, do as `strategy` says; `on_end` runs when the run has stored its turn.

        `parent_id`: the turn the new one follows (0: none; None: the active leaf).
        `first`: the conversation had no turn when read, so the question goes in as a first
        one (its answer can start as its row is written), unless it finds another turn
        holding the conversation: then, queued or in that turn's place, it follows it.
        `regenerates`: the turn it answers again, as that turn's new sibling.
        `answer`: a decision on the conversation's paused turn, which goes on (same row)
        instead of a new question: `Busy` (409) when no paused turn waits on it.

        With `enqueue` on a busy conversation the run comes back at once, holding
        only its `queued` event, and is launched later in the same log. `webhook` is
        kept with the turn, for an instance that carries it on. `remembered`: the user's
        memory, read with the turn's project.
        """
        agent, claim, claimed_now = claimed.agent, claimed.claim, claimed.taken
        turn = Turn(
            key=claim.key,
            question=question,
            task_id=claim.task_id,
            file_id=file_id,
            parent_id=0 if first and claimed_now else parent_id,
            regenerates=regenerates,
            options=options or GenerateOptions(),
            model_id=model_id,
            model_named=model_named,
            tool_approval=tool_approval,
            answer=answer,
            review_plan=review_plan,
            template_file_id=template_file_id,
            project=project,
            temporary=temporary,
            webhook=webhook,
            remembered=remembered,
        )
        try:
            if not claimed_now and strategy == "enqueue" and answer is None:
                return await self._enqueue(agent, claim, turn, on_end)
            if not claimed_now and strategy in ("interrupt", "rollback"):
                claimed_now = await self._take_over(claim, strategy, claimed.ticket)
        except TaskBackendUnavailable as exc:
            raise Unavailable(TASKS_DOWN) from exc
        if not claimed_now:
            raise Busy("A task is already running for this conversation")
        return await self._launch(agent, claim, turn, on_end, posted=True)

    async def stop(self, user_id: str, conversation_id: str) -> bool:
        """Empty the conversation's queue and stop its running turn, on any instance;
        whether there was either."""
        # The queue first: stopping the running turn would otherwise start the next queued one.
        queued = await self._queue.clear_queue(user_id, conversation_id)
        return await self.stop_run(user_id, conversation_id) or queued > 0

    async def stop_run(self, user_id: str, conversation_id: str) -> bool:
        """Stop the conversation's running turn, on any instance; whether one ran."""
        return await self._claims.request_stop(user_id, conversation_id, self._stop_wait)

    async def running(self, user_id: str, conversation_id: str) -> bool:
        """Whether a turn of the conversation runs now, on any instance."""
        try:
            return await self._claims.current(user_id, conversation_id) is not None
        except TaskBackendUnavailable as exc:
            raise Unavailable(TASKS_UNREADABLE) from exc

    async def shutdown(self) -> None:
        """Queued turns leave their queues (their streams end `stopped`) with the app."""
        for task in self._waiting:
            task.cancel()
        await asyncio.gather(*self._waiting, return_exceptions=True)

    async def _claim(self, kind: str, user_id: str, conversation_id: str, question: str) -> Claimed:
        try:
            agent = await self._agents.get(kind)
        except Exception as exc:  # whatever its first build met (its store down, say): logged there
            raise Unavailable(f"The {kind} agent could not start") from exc
        if agent is None:
            raise NotAvailable(f"The {kind} agent is not available in this version")
        claim = Claim(user_id, conversation_id, uuid.uuid4().hex, kind)
        ticket = _ticket(claim, question, "running")
        try:
            taken = await self._claims.claim(claim, self._ttl, ticket)
        except TaskBackendUnavailable as exc:
            raise Unavailable(TASKS_DOWN) from exc
        return Claimed(agent, claim, ticket, taken)

    async def _launch(
        self,
        agent: BaseAgent,
        claim: Claim,
        turn: Turn,
        on_end: OnEnd | None,
        run: Run | None = None,
        *,
        posted: bool = False,
    ) -> Run:
        """Store the question and start the run; list it unless its claim did (`posted`).

        A burst of new turns takes turns here, a few at a time: each start costs
        far more than an event of a running stream, and a thousand at once held
        the running streams' events back by half a second (bench/README.md).
        """
        with self._runs.starting(claim.key):
            async with self._starting:
                if agent.overlaps and turn.answer is None and turn.parent_id == 0:
                    launched = await self._overlapped(agent, claim, turn, on_end, run)
                else:
                    await self._begin(agent, claim, turn)
                    launched = self.run(agent, claim, turn, on_end, run)
        if not posted:
            await self._show(_ticket(claim, turn.question, "running"))
        return launched

    async def _begin(self, agent: BaseAgent, claim: Claim, turn: Turn) -> None:
        """Store the question (or take the decision on the paused turn); on failure the claim
        is released, and a database that failed is `Unavailable`."""
        try:
            if turn.answer is None:
                await agent.begin(turn)
            elif not await agent.go_on(turn):
                raise Busy(UNDECIDABLE)
        except BaseException as exc:
            with contextlib.suppress(TaskBackendUnavailable):
                await self._claims.release(claim)
            if isinstance(exc, StoreError):
                raise Unavailable(DATABASE_DOWN) from exc
            raise

    async def _overlapped(
        self, agent: BaseAgent, claim: Claim, turn: Turn, on_end: OnEnd | None, run: Run | None
    ) -> Run:
        """Launch the run as the question is stored: the model call starts meanwhile, its
        first event waits for the row (tasks/runs.py, `Storing`). The turn has nothing above
        it (`parent_id` 0), so its prompt needs nothing of the row's statement.

        Not stored, the run ends unseen, its model call cancelled, and the caller gets the
        same error as when nothing overlapped."""
        stored: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        launched = self.run(agent, claim, turn, on_end, run, stored)
        try:
            await self._begin(agent, claim, turn)
        except BaseException:
            stored.set_result(False)
            await launched.ended.wait()
            raise
        launched.row_id = turn.row_id
        stored.set_result(True)
        return launched

    def run(
        self,
        agent: BaseAgent,
        claim: Claim,
        turn: Turn,
        on_end: OnEnd | None = None,
        run: Run | None = None,
        stored: asyncio.Future[bool] | None = None,
    ) -> Run:
        """Launch the stored turn's run under `claim`, as the telemetry watches runs (a turn
        begun here, or one carried on from another instance: app/service/takeover.py);
        `stored`: the question is being stored still (`_overlapped`)."""
        program = agent.start(turn)
        storing = None if stored is None else Storing(stored, program.open, program.abandon)
        launched = self._observer.launch(
            claim.agent_type,
            turn,
            program,
            lambda observed: self._runs.launch(claim, observed, on_end, run, storing),
        )
        launched.row_id = turn.row_id
        return launched

    async def _take_over(self, claim: Claim, strategy: Strategy, ticket: Ticket) -> bool:
        """Stop the running turn and take its place; rollback deletes the stopped turn's row."""
        for _ in range(_TAKE_OVER_ATTEMPTS):
            stopped = await self._claims.request_stop(
                claim.user_id, claim.conversation_id, self._stop_wait
            )
            if not await self._claims.claim(claim, self._ttl, ticket):
                continue
            if strategy == "rollback" and stopped:
                try:
                    deleted = await self._store.delete_last_turn(
                        claim.user_id, claim.conversation_id, ("stopped",)
                    )
                except StoreError as exc:
                    with contextlib.suppress(TaskBackendUnavailable):
                        await self._claims.release(claim)
                    raise Unavailable(DATABASE_DOWN) from exc
                if deleted is not None:
                    await self.forget_turns(claim.user_id, claim.conversation_id, [deleted])
            return True
        return False

    async def _enqueue(
        self, agent: BaseAgent, claim: Claim, turn: Turn, on_end: OnEnd | None
    ) -> Run:
        position = await self._queue.join_queue(claim, self._ttl)
        await self._show(_ticket(claim, turn.question, "queued"))
        run = Run(claim)
        run.log.append(QueuedEvent(claim.conversation_id, position))
        waiter = asyncio.create_task(
            self._wait_turn(agent, run, turn, on_end), name=f"queued-{claim.task_id}"
        )
        run.task = waiter
        self._waiting.add(waiter)
        waiter.add_done_callback(self._waiting.discard)
        return run

    async def _wait_turn(
        self, agent: BaseAgent, run: Run, turn: Turn, on_end: OnEnd | None
    ) -> None:
        """Wait at the queue until this turn heads it and the conversation is free, then launch."""
        claim, began = run.claim, time.monotonic()
        error: ErrorEvent | None = None
        try:
            while (state := await self._queue.claim_queued(claim, self._ttl)) == "waiting":
                await self._queue.wait_released(
                    claim.user_id, claim.conversation_id, min(_QUEUE_RECHECK_SECONDS, self._ttl / 3)
                )
                await self._queue.keep_queued(claim, self._ttl)
            if state == "claimed":
                await self._started(agent, run, turn, on_end)
                return
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        except (TaskError, Unavailable) as exc:
            log.warning("queued turn %s could not start: %s", claim.task_id, exc)
            error = ErrorEvent(
                "UNAVAILABLE", "The service could not start this queued message.", str(exc)
            )
        except Exception:
            log.exception("queued turn %s failed", claim.task_id)
            error = ErrorEvent("INTERNAL_ERROR", "The queued message could not start.")
        await self._unqueued(run, turn, began, error, on_end)

    async def _started(self, agent: BaseAgent, run: Run, turn: Turn, on_end: OnEnd | None) -> None:
        """Launch the queued turn that holds its claim now, whatever cancels this waiter.

        Storing the question and launching are one step: a stop landing in the
        middle would leave a `running` row with no run. So the step finishes,
        and the stop is passed on to the run it launched.
        """
        launching = asyncio.ensure_future(self._launch(agent, run.claim, turn, on_end, run))
        try:
            await asyncio.shield(launching)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            await launching
            reason = run.stop_reason or "stopped"
            run.stop_reason = None  # the stop cancelled this waiter, not the run yet
            run.stop(reason)

    async def _unqueued(
        self,
        run: Run,
        turn: Turn,
        began: float,
        error: ErrorEvent | None,
        on_end: OnEnd | None,
    ) -> None:
        """A queued turn that never started: out of the queue and the list, its stream ended."""
        with contextlib.suppress(TaskError):
            await self._queue.leave_queue(run.claim)
        await self._hide(_ticket(run.claim, turn.question, "queued"))
        if error is not None:
            run.log.append(error)
        run.complete = CompleteEvent(
            status="failed" if error else "stopped",
            first_response_time=None,
            total_response_time=int((time.monotonic() - began) * 1000),
        )
        run.settled = True
        run.log.end(run.complete)
        run.log.close()
        run.ended.set()
        if on_end is not None:
            await on_end()

    async def _show(self, ticket: Ticket) -> None:
        """The list of runs is a convenience: a failure to write it never fails the turn."""
        try:
            await self._board.post(ticket)
        except TaskError as exc:
            log.warning("could not list run %s: %s", ticket.task_id, exc)

    async def _hide(self, ticket: Ticket) -> None:
        try:
            await self._board.unpost(ticket)
        except TaskError as exc:
            log.warning("could not unlist run %s (dropped when next read): %s", ticket.task_id, exc)


def _ticket(claim: Claim, question: str, status: Literal["running", "queued"]) -> Ticket:
    return Ticket(
        user_id=claim.user_id,
        conversation_id=claim.conversation_id,
        task_id=claim.task_id,
        agent_type=claim.agent_type,
        question=question,
        started_at=datetime.now(UTC),
        status=status,
    )
