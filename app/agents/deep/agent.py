"""The deep research agent (`/agent/deep/stream`): its graph, checkpoints, and what a message means.

A conversation's research is one LangGraph thread. What the next message
does depends on where that thread stands:

- waiting for the user (the research asked something): the message is the
  answer, and the graph resumes from its checkpoint with the question kept;
- unfinished (stopped, failed, or its instance died) and the message is
  "continue" or "retry" (继续, 重试): it resumes from the last finished step,
  and tasks already finished are not run again;
- anything else starts new research, with the conversation as memory.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command, Interrupt

from app.agents.approvals import new_approval_id
from app.agents.base import BaseAgent
from app.agents.deep import checkpoints
from app.agents.deep.checkpoints import open_checkpointer, thread_id
from app.agents.deep.graph import DeepContext, DeepGraph, TaskResearcher, build_graph, shown_again
from app.agents.deep.prompts import CONTINUE_WORDS
from app.agents.deep.state import DeepState
from app.agents.deep.structured import ModelSteps
from app.agents.turn import AgentCore, AgentFailure, Turn, TurnState
from app.config import Settings, SettingsPart
from app.core.events import ApprovalEvent, Event, PlannedTask, ThinkingEvent
from app.core.run import ConversationKey
from app.store.records import Pending, PlanTask
from app.tools.base import Tool

OpenCheckpointer = Callable[[], AbstractAsyncContextManager[BaseCheckpointSaver[str]]]
"""Opens the checkpoint store for the app's life: our database's, or another for a benchmark."""


class DeepSettings(SettingsPart, prefix="deep_"):
    max_parallel: int
    max_rounds: int
    task_max_rounds: int


class DeepResearchAgent(BaseAgent):
    agent_type = "deep"

    def __init__(
        self,
        core: AgentCore,
        checkpoints: OpenCheckpointer,
        search: Tool | None,
        limits: DeepSettings,
    ) -> None:
        super().__init__(core)
        self._checkpoints = checkpoints
        self._limits = limits
        task_core = dataclasses.replace(
            core, limits=dataclasses.replace(core.limits, max_rounds=limits.task_max_rounds)
        )
        self._researcher = TaskResearcher(task_core, search)
        self._search = search
        self._saver: BaseCheckpointSaver[str] | None = None
        self._graph: DeepGraph | None = None

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

    async def forget(self, key: ConversationKey) -> None:
        if self._saver is not None:
            await self._saver.adelete_thread(thread_id(key))

    async def ping(self) -> None:
        if self._saver is not None:
            await checkpoints.ping(self._saver)

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        graph, saver = self._graph, self._saver
        if graph is None or saver is None:
            raise RuntimeError("the deep research agent is used outside the app's lifespan")
        config: RunnableConfig = {
            "configurable": {"thread_id": thread_id(turn.key)},
            "max_concurrency": self._limits.max_parallel,
        }
        snapshot = await graph.aget_state(config)
        start: Any
        if snapshot.interrupts and turn.answer is not None:
            answer = turn.answer
            decided = {"decision": answer.decision, "arguments": answer.arguments}
            start = Command(resume=decided | {"message": answer.message})
        elif snapshot.interrupts:
            start = Command(resume=turn.question)
        elif snapshot.next and _asks_to_continue(turn.question):
            start = None
            yield ThinkingEvent("Continuing the research where it stopped.\n")
            for event in shown_again(cast(DeepState, snapshot.values)):
                yield event
        else:
            if snapshot.values:
                await saver.adelete_thread(thread_id(turn.key))
            start = {"question": turn.question, "review_plan": turn.review_plan}
            if self._search is None:
                yield ThinkingEvent(
                    "Web search is not configured (no TAVILY_API_KEY): researching from the"
                    " model alone.\n"
                )
        context = DeepContext(
            ModelSteps(self.core.model, turn, state), self._researcher, self._limits.max_rounds
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


def _asks_to_continue(message: str) -> bool:
    return message.strip().strip(string.punctuation + "。！!？?").strip().lower() in CONTINUE_WORDS


def build(core: AgentCore, settings: Settings) -> DeepResearchAgent:
    """With a Tavily key, each task searches the web; without one, tasks use the model alone."""
    return DeepResearchAgent(
        core,
        partial(open_checkpointer, settings.database_url),
        core.search,
        DeepSettings.from_settings(settings),
    )
