"""The agents of this build, each built at its first turn rather than at start.

An agent's module pulls in what only it needs (deep research LangGraph and
psycopg, the deck builder python-pptx and pdfium, the host agent the A2A
client): importing them all at start cost every worker seconds and about a
hundred megabytes before it served anything, whatever it was asked. Here a
kind's module is imported (in a thread, so open streams keep flowing) and
its agent built and opened the first time a turn needs it, once, however
many turns ask at the same moment.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Iterable
from contextlib import AsyncExitStack

from app.agents.base import BaseAgent
from app.agents.registry import AgentEntry
from app.agents.turn import AgentCore
from app.config import Settings

log = logging.getLogger(__name__)


class OnDemandAgents:
    """Builds each kind's agent on first use and keeps its resources open on `stack`.

    `stack` is entered where the agents' resources must close: after every run
    has ended, before the database and clients they use.
    """

    def __init__(
        self,
        entries: Iterable[AgentEntry],
        core: AgentCore,
        *,
        settings: Settings,
        stack: AsyncExitStack,
    ) -> None:
        self._entries = {entry.kind: entry for entry in entries if entry.runs_with(settings)}
        self._core = core
        self._settings = settings
        self._stack = stack
        self._agents: dict[str, BaseAgent] = {}
        self._building: dict[str, asyncio.Task[BaseAgent]] = {}

    def kinds(self) -> frozenset[str]:
        return frozenset(self._entries)

    def built(self) -> list[BaseAgent]:
        """The agents built so far: the only ones holding anything open."""
        return list(self._agents.values())

    async def get(self, kind: str) -> BaseAgent | None:
        """The kind's agent, built and opened now if this is its first turn; None: not here.

        The build is a task of its own, shielded and in an empty context: a caller
        that gives up does not cancel it for the others waiting, and what the agent
        keeps running (the host's card refresh) is not part of the first request's trace.
        """
        agent = self._agents.get(kind)
        if agent is not None:
            return agent
        entry = self._entries.get(kind)
        if entry is None:
            return None
        building = self._building.get(kind)
        if building is None:
            building = asyncio.create_task(
                self._build(entry), name=f"build-{kind}", context=contextvars.Context()
            )
            self._building[kind] = building
            building.add_done_callback(self._done)
        return await asyncio.shield(building)

    async def of_kinds(self, kinds: Iterable[str]) -> list[BaseAgent]:
        """The agents of these kinds in this build, built now where not yet (a deleted turn
        reaches what its kind keeps of it, whether or not this process ran one)."""
        agents = []
        for kind in sorted(set(kinds)):
            agent = await self.get(kind)
            if agent is not None:
                agents.append(agent)
        return agents

    async def _build(self, entry: AgentEntry) -> BaseAgent:
        factory = await asyncio.to_thread(entry.load)
        agent = factory(self._core, self._settings)
        agent.agent_type = entry.kind
        await self._stack.enter_async_context(agent.resources())
        self._agents[entry.kind] = agent
        return agent

    def _done(self, building: asyncio.Task[BaseAgent]) -> None:
        """Forget the build: built, the agent is kept; failed, the next turn tries again."""
        self._building = {k: t for k, t in self._building.items() if t is not building}
        if not building.cancelled() and (failure := building.exception()) is not None:
            log.error("%s failed: %s", building.get_name(), failure)
