"""Every agent kind the service knows: one entry each, and the only list of kinds.

The key is the path segment of `/agent/{kind}/stream` (and of every other
wire format's route) and the stored `agent_type`. An entry says what its
agent needs (a file, or accepts one; whether it suggests follow-ups), how
another agent reads it (the A2A card's skill), and how it is built: a
factory that takes the shared core and the settings, and builds the agent's
own dependencies itself, named by its place so that its module (and what
only it needs) loads at the kind's first turn (`on_demand`). A kind the
contract names but this build has no factory for answers 501. `create_app`
builds the routes, `/agent/kinds`, the card and the 400 for a missing file
from the entries it is given, and an agent drops what it keeps of a deleted
conversation itself (`forget`), so adding an agent is one module plus one
entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from app.agents.base import BaseAgent
    from app.agents.turn import AgentCore
    from app.config import Settings

AgentFactory = Callable[["AgentCore", "Settings"], "BaseAgent"]


@dataclass(frozen=True, slots=True)
class AgentEntry:
    kind: str
    name: str
    """What a person calls it (the page's agent list, the docs)."""
    summary: str
    factory: AgentFactory | str | None = None
    """The agent's builder, or where it is (`module:name`, imported at the kind's first
    turn: app/agents/on_demand.py); None: named by the contract, not built in this
    version (501)."""
    description: str = ""
    """What it does, as another agent reads it (the A2A card's skill); empty: `summary`."""
    examples: tuple[str, ...] = ()
    """Requests it answers well, for that card."""
    needs_file: bool = False
    accepts_file: bool = False
    follow_ups: bool = True
    """Whether its answers end with suggested follow-up questions (when enabled)."""
    configured: Callable[[Settings], bool] | None = None
    """Whether the settings give it what it works with; None: always. An agent with
    nothing to work with (the host agent without remote agents) is not run: 501."""

    @property
    def built(self) -> bool:
        return self.factory is not None

    def runs_with(self, settings: Settings) -> bool:
        """Built in this version and, so configured, of use."""
        return self.built and (self.configured is None or self.configured(settings))

    def load(self) -> AgentFactory:
        """The builder, its module imported now if the entry names it by place."""
        if self.factory is None:
            raise LookupError(f"the {self.kind} agent is not built in this version")
        if not isinstance(self.factory, str):
            return self.factory
        module, _, name = self.factory.partition(":")
        return cast(AgentFactory, getattr(importlib.import_module(module), name))


def _has_remote_agents(settings: Settings) -> bool:
    return bool(settings.a2a_agents.get_secret_value().strip())


AGENTS: tuple[AgentEntry, ...] = (
    AgentEntry(
        "chat",
        "Web search",
        "Web-search agent stream",
        "app.agents.web_search:build",
        description="Answers questions with current facts from a web search, citing its sources.",
        examples=(
            "What changed in the EU AI Act this year?",
            "Compare the latest iPhone and Pixel cameras.",
            "Which European cities have the cleanest air?",
        ),
        accepts_file=True,
    ),
    AgentEntry(
        "file",
        "Ask a file",
        "File question-answering agent stream",
        "app.agents.file_qa:build",
        description="Answers questions about an uploaded document (metadata `fileId`).",
        examples=(
            "Summarise this document in five bullet points.",
            "What are the key figures, and where are they?",
            "List the open questions it leaves.",
        ),
        needs_file=True,
        accepts_file=True,
    ),
    AgentEntry(
        "pptx",
        "PowerPoint",
        "PowerPoint builder agent stream",
        "app.agents.pptx:build",
        description=(
            "Builds a PowerPoint deck on a topic; the deck comes back as a file artifact."
        ),
        examples=(
            "A 6-slide deck on heat pumps for a town council.",
            "An 8-slide pitch for a community garden.",
            "5 slides introducing our team to new hires.",
        ),
    ),
    AgentEntry(
        "deep",
        "Deep research",
        "Deep research agent stream",
        "app.agents.deep:build",
        description=(
            "Deep research: plans, searches in parallel, checks itself and writes a cited"
            " report; may ask a clarifying question first (input-required)."
        ),
        examples=(
            "How big is the European heat pump market, and where is it going?",
            "What does the research say about four-day work weeks?",
            "Compare the main approaches to grid-scale battery storage.",
        ),
    ),
    AgentEntry(
        "skills",
        "Skills",
        "Skills agent stream",
        "app.agents.skills_agent:build",
        description="Works with skills (documents, data, scripts) in a sandboxed workspace.",
        examples=(
            "Turn this CSV into a summary table.",
            "Write a short Word report on the attached data.",
            "Make a chart of the numbers in this file.",
        ),
        accepts_file=True,
    ),
    AgentEntry(
        "host",
        "Remote agents",
        "Host agent stream: delegates to remote A2A agents",
        "app.agents.host:build",
        description="Delegates to the remote A2A agents this service knows.",
        examples=(
            "Ask the research agent for the latest figures.",
            "Which remote agents can help with travel planning?",
        ),
        configured=_has_remote_agents,
    ),
)
