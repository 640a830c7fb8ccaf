"""The deep research agent (`/agent/deep/stream`): its graph, checkpoints, and what a message means.

Each turn's research is a LangGraph thread of its own (checkpoints.py).
What a message does depends on where its parent turn's research stands,
never on another branch's:

- waiting for the user (the research asked something): the message is the
  answer, and the graph resumes from a copy of the parent's checkpoint with
  the question kept;
- unfinished (stopped, failed, or its instance died) and the message is
  "continue" or "retry" (继续, 重试): it resumes from the last finished step,
  and tasks already finished are not run again;
- anything else starts new research, with the path to the parent as memory.

A turn carried on from another instance (its own died, or drained) resumes
its own thread from the last checkpoint: finished steps and tasks are not run
again, the task that was running starts over, and a report cut mid-way is
continued from where it stopped rather than written (and shown) twice.

A regeneration (`regenerate`) of a turn whose research finished reuses that
research: the new turn starts from the checkpoint taken just before its
report, so only the report is written again (no plan, no task, no search).
"""

from __future__ import annotations

import asyncio
import dataclasses
import string
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command, Interrupt, StateSnapshot

from app.agents.approvals import new_approval_id
from app.agents.base import BaseAgent
from app.agents.deep import checkpoints
from app.agents.deep.checkpoints import (
    copy_checkpoint,
    delete_threads,
    open_checkpointer,
    thread_config,
    thread_id,
    turn_thread,
)
from app.agents.deep.files import ReportFiles, report_formats
from app.agents.deep.graph import (
    DeepContext,
    DeepGraph,
    TaskResearcher,
    build_graph,
    numbered_sources,
    references_of,
    shown_again,
)
from app.agents.deep.prompts import CONTINUE_WORDS
from app.agents.deep.reading import TurnReading
from app.agents.deep.state import DeepState
from app.agents.deep.structured import ModelSteps
from app.agents.turn import AgentCore, AgentFailure, Turn, TurnState
from app.config import Settings, SettingsPart
from app.core.events import ApprovalEvent, Event, PlannedTask, TextEvent, ThinkingEvent
from app.core.run import ConversationKey
from app.documents.report import CitedSource
from app.store.base import GoneTurn
from app.store.models import StoredTurn
from app.store.records import Pending, PlanTask
from app.tools.base import Tool
from app.tools.fetch_page import FetchPage

OpenCheckpointer = Callable[[], AbstractAsyncContextManager[BaseCheckpointSaver[str]]]
"""Opens the checkpoint store for the app's life: our database's, or another for a benchmark."""


class DeepSettings(SettingsPart, prefix="deep_"):
    max_parallel: int
    max_rounds: int
    task_max_rounds: int
    fetch_per_task: int
    fetch_parallel: int
    report_formats: str


class DeepResearchAgent(BaseAgent):
    agent_type = "deep"
    carries_on = True

    def __init__(
        self,
        core: AgentCore,
        checkpoints: OpenCheckpointer,
        search: Tool | None,
        limits: DeepSettings,
        fetch_page: FetchPage | None = None,
    ) -> None:
        super().__init__(core)
        self._checkpoints = checkpoints
        self._limits = limits
        task_core = dataclasses.replace(
            core, limits=dataclasses.replace(core.limits, max_rounds=limits.task_max_rounds)
        )
        self._researcher = TaskResearcher(task_core, search, fetch_page)
        self._search = search
        self._fetch_page = fetch_page
        self._saver: BaseCheckpointSaver[str] | None = None
        self._graph: DeepGraph | None = None
        self._files = ReportFiles(core.documents, report_formats(limits.report_formats))

    @asynccontextmanager
    async def resources(self) -> AsyncIterator[None]:
        """The checkpoint store, opened (and its tables made) once for the app's life."""
        async with self._checkpoints() as saver:
            self._saver = saver
            self._graph = build_graph().compile(checkpointer=saver)
            try:
                yield
            finally:
                self._saver = self._graph = None

    async def forget(self, key: ConversationKey, gone: Sequence[GoneTurn]) -> None:
        """The turns' threads, and the conversation's from before each turn had its own."""
        await self.forget_turns(key, gone)
        if self._saver is not None:
            await self._saver.adelete_thread(thread_id(key))

    async def forget_turns(self, key: ConversationKey, gone: Sequence[GoneTurn]) -> None:
        if self._saver is not None:
            await delete_threads(self._saver, (turn_thread(key, t.id) for t in gone))

    async def ping(self) -> None:
        if self._saver is not None:
            await checkpoints.ping(self._saver)

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        graph, saver = self._graph, self._saver
        if graph is None or saver is None:
            raise RuntimeError("the deep research agent is used outside the app's lifespan")
        own = turn_thread(turn.key, turn.row_id)
        config: RunnableConfig = {
            **thread_config(own),
            "max_concurrency": self._limits.max_parallel,
        }
        snapshot = await graph.aget_state(config)
        carried = turn.carried is not None
        if snapshot.values and turn.answer is None and not carried:
            # A turn id used again (SQLite reuses the newest row's id once it is deleted).
            await saver.adelete_thread(own)
        start: Any
        report_so_far = ""
        if carried:
            # Carried on from another instance: its own thread, from the last checkpoint.
            start = None if snapshot.values else self._new(turn)
            if snapshot.next == ("report",):
                report_so_far = "".join(state.answer)
            elif snapshot.values and not snapshot.next:
                for event in _report_rest(cast(DeepState, snapshot.values), state):
                    yield event
        elif turn.answer is not None and snapshot.interrupts:
            # A decision on this turn's own plan review: the turn goes on in its thread.
            answer = turn.answer
            decided = {"decision": answer.decision, "arguments": answer.arguments}
            start = Command(resume=decided | {"message": answer.message})
        elif (finished := await self._before_report(graph, turn)) is not None:
            await copy_checkpoint(saver, finished.config, own, writes=False)
            start = None
            yield ThinkingEvent("Writing the report again from the finished research.\n")
            for event in shown_again(cast(DeepState, finished.values)):
                yield event
        elif (earlier := await self._parent_research(graph, turn)) is not None and (
            earlier.interrupts or (earlier.next and _asks_to_continue(turn.question))
        ):
            await copy_checkpoint(saver, earlier.config, own, writes=True)
            if earlier.interrupts:
                start = Command(resume=turn.question)
            else:
                start = None
                yield ThinkingEvent("Continuing the research where it stopped.\n")
                for event in shown_again(cast(DeepState, earlier.values)):
                    yield event
        else:
            start = self._new(turn)
            if self._search is None:
                yield ThinkingEvent(
                    "Web search is not configured (no TAVILY_API_KEY): researching from the"
                    " model alone.\n"
                )
        core = self.core
        context = DeepContext(
            ModelSteps(core.model_for(turn.model_id), turn, state),
            self._researcher,
            self._limits.max_rounds,
            report_model=core.model_for(core.role_model("report", turn.model_id)),
            reading=self._reading(),
            report_so_far=report_so_far,
        )
        async for mode, chunk in graph.astream(
            start,
            config,
            context=context,
            stream_mode=["custom", "updates"],
            # Each step is stored before the next starts: a crash or a stop loses no finished step.
            durability="sync",
        ):
            if mode == "custom":
                yield cast(Event, chunk)
            elif "__interrupt__" in chunk:
                state.pause()
                interrupts: tuple[Interrupt, ...] = cast(Any, chunk)["__interrupt__"]
                for waiting in interrupts:
                    if isinstance(waiting.value, dict) and waiting.value.get("kind") == "plan":
                        yield await self._ask_review(turn, state, waiting.value)
        if state.outcome == "completed" and self._files.wanted and not state.files:
            async for made in self._report_files(graph, config, turn):
                yield made

    @staticmethod
    def _new(turn: Turn) -> dict[str, Any]:
        """The input of new research."""
        return {"question": turn.question, "review_plan": turn.review_plan}

    async def _report_files(
        self, graph: DeepGraph, config: RunnableConfig, turn: Turn
    ) -> AsyncIterator[Event]:
        """The finished report as files (`DEEP_REPORT_FORMATS`)."""
        finished = await graph.aget_state(config)
        values = cast(DeepState, finished.values)
        if finished.next or not values.get("report"):
            return
        yield ThinkingEvent("Writing the report as files…\n")
        sources = [
            CitedSource(number, s["title"], s["url"])
            for number, s in enumerate(numbered_sources(values), 1)
        ]
        async for made in self._files.hand_over(
            turn.user_id, turn.conversation_id, values["question"], values["report"], sources
        ):
            yield made

    async def _ask_review(self, turn: Turn, state: TurnState, asked: dict[str, Any]) -> Event:
        """The plan review as the turn's pending decision: stored first, then the event."""
        tasks = list(asked.get("tasks", []))
        approval_id = new_approval_id()
        pending = Pending(
            approval_id=approval_id,
            kind="plan",
            arguments={"tasks": tasks},
            plan=[PlanTask(id=t["id"], title=t["title"], depends_on=t["dependsOn"]) for t in tasks],
        )
        state.pending = [pending]
        if not await self.store(turn, state, "paused", None, lambda: None):
            raise AgentFailure("STORE_FAILED", "the plan to review could not be stored")
        return ApprovalEvent(
            approval_id,
            "plan",
            {"tasks": tasks},
            plan=[PlannedTask(t.id, t.title, tuple(t.depends_on)) for t in pending.plan],
        )

    async def _before_report(self, graph: DeepGraph, turn: Turn) -> StateSnapshot | None:
        """The regenerated turn's research just before its report, if it finished; else None."""
        if turn.regenerates is None:
            return None
        config = thread_config(turn_thread(turn.key, turn.regenerates))
        latest = await graph.aget_state(config)
        if latest.next or not latest.values.get("report"):
            return None
        async for snapshot in graph.aget_state_history(config):
            if snapshot.next == ("report",):
                return snapshot
        return None

    async def _parent_research(self, graph: DeepGraph, turn: Turn) -> StateSnapshot | None:
        """Where the research of the turn this one follows stands; None if it has none."""
        parent = await self._parent(turn)
        if parent is None or parent.id is None:
            return None
        snapshot = await graph.aget_state(thread_config(turn_thread(turn.key, parent.id)))
        if snapshot.values:
            return snapshot
        if parent.agent_type != self.agent_type:
            return None
        # Stored before each turn had a thread: the conversation's, if its research began
        # on this branch (it holds the newest research, whichever branch that was).
        legacy = await graph.aget_state(thread_config(thread_id(turn.key)))
        asked = {t.question for t in turn.earlier} | {parent.question}
        return legacy if legacy.values.get("question") in asked else None

    async def _parent(self, turn: Turn) -> StoredTurn | None:
        """The stored turn this one follows: the end of the memory read with its question, or
        (no memory kept) read from the store."""
        if turn.earlier:
            return turn.earlier[-1]
        store, user, conversation = self.core.store, turn.user_id, turn.conversation_id
        own = await store.get_turn(user, conversation, turn.row_id)
        if own is None or not own.parent_id:
            return None
        return await store.get_turn(user, conversation, own.parent_id)

    def _reading(self) -> TurnReading | None:
        """This turn's reading of its search results; None when it reads none."""
        limits = self._limits
        if self._fetch_page is None or self._search is None or limits.fetch_per_task <= 0:
            return None
        return TurnReading(
            self._fetch_page.reader,
            limits.fetch_per_task,
            asyncio.Semaphore(limits.fetch_parallel),
        )


def _report_rest(values: DeepState, state: TurnState) -> list[Event]:
    """A carried-on turn whose research had finished when it moved: the end of the report its
    log did not get to (the graph holds the whole), and the report's sources."""
    state.references = references_of(values)
    report, shown = values.get("report", ""), "".join(state.answer)
    rest = report[len(shown) :] if report.startswith(shown) else ""
    return [TextEvent(rest)] if rest else []


def _asks_to_continue(message: str) -> bool:
    return message.strip().strip(string.punctuation + "。！!？?").strip().lower() in CONTINUE_WORDS


def build(core: AgentCore, settings: Settings) -> DeepResearchAgent:
    """With a Tavily key, each task searches the web; without one, tasks use the model alone."""
    return DeepResearchAgent(
        core,
        partial(
            open_checkpointer,
            settings.database_url,
            transaction_pooler=settings.db_transaction_pooler,
        ),
        core.search,
        DeepSettings.from_settings(settings),
        core.fetch_page,
    )
