"""The host agent (`/agent/host/stream`): ReAct over remote A2A agents, one tool each.

It answers by delegating: each agent listed in `A2A_AGENTS` whose card
could be read is a tool described from that card (app/tools/remote_agents.py),
and the model decides whom to ask, and what. The tools are taken afresh
each turn, so an agent found (or lost) by a card refresh shows from the
next turn on. With no remote agent reachable it answers from the model
alone, and says so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from app.agents.react import ReActAgent
from app.agents.turn import AgentCore, Turn
from app.config import Settings
from app.tools.a2a_client import RemoteAgents
from app.tools.base import Tool
from app.tools.remote_agents import remote_tools
from app.tools.untrusted import UNTRUSTED_CONTENT_RULE

SYSTEM_PROMPT = (
    """You are a coordinator. Today is {today}.
You answer by delegating to the remote agents you have as tools: pick the one (and the skill)
that fits, write it a complete, self-contained request, and ask several in parallel when the
question has independent parts. Then answer the user from what they returned, citing it;
do not invent what no agent said.{reading} Answer in the language of the question, in Markdown.
"""
    + UNTRUSTED_CONTENT_RULE
)

READ_PAGES = " To check a page an agent cited, or one the user gave, read it with fetch_page."

NO_AGENTS_NOTICE = (
    "No remote agent is reachable (A2A_AGENTS is empty, or their cards could not be read):"
    " answering from the model alone.\n"
)


class HostAgent(ReActAgent):
    agent_type = "host"

    def __init__(self, core: AgentCore, remotes: RemoteAgents) -> None:
        super().__init__(core)
        self._remotes = remotes

    @asynccontextmanager
    async def resources(self) -> AsyncIterator[None]:
        """The remote agents' cards, read at start-up and refreshed for the app's life."""
        async with self._remotes.running():
            yield

    def system_prompt(self, turn: Turn) -> str:
        reading = READ_PAGES if self.core.fetch_page is not None else ""
        return SYSTEM_PROMPT.format(today=datetime.now(UTC).date().isoformat(), reading=reading)

    def tools(self, turn: Turn) -> Sequence[Tool]:
        tools: list[Tool] = list(remote_tools(self._remotes))
        if self.core.fetch_page is not None:
            tools.append(self.core.fetch_page)
        return tools

    def notices(self, turn: Turn) -> list[str]:
        return [] if self._remotes.available() else [NO_AGENTS_NOTICE]


def build(core: AgentCore, settings: Settings) -> HostAgent:
    return HostAgent(core, RemoteAgents.from_settings(settings))
