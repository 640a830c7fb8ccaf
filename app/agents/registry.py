"""Every agent kind the service knows: one entry each, and the only list of kinds.

The key is the path segment of `/agent/{kind}/stream` and the stored
`agent_type`. An entry says what its agent needs (a file, or accepts one;
whether it suggests follow-ups) and how it is built: a factory that takes
the shared core and the settings, and builds the agent's own dependencies
itself. A kind the contract names but this build has no factory for
answers 501. The routes, the 400 for a missing file and the 501 all come
from here, so adding an agent is one module plus one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.agents import deep, file_qa, host, pptx, skills, web_search
from app.agents.base import AgentCore, BaseAgent
from app.config import Settings

AgentFactory = Callable[[AgentCore, Settings], BaseAgent]


@dataclass(frozen=True, slots=True)
class AgentEntry:
    kind: str
    name: str
    """What a person calls it (the page's agent list, the docs)."""
    summary: str
    factory: AgentFactory | None = None
    """None: named by the contract, not built in this version (501)."""
    needs_file: bool = False
    accepts_file: bool = False
    follow_ups: bool = True
    """Whether its answers end with suggested follow-up questions (when enabled)."""

    @property
    def built(self) -> bool:
        return self.factory is not None


AGENTS: tuple[AgentEntry, ...] = (
    AgentEntry("chat", "Web search", "Web-search agent stream", web_search.build),
    AgentEntry(
        "file",
        "Ask a file",
        "File question-answering agent stream",
        file_qa.build,
        needs_file=True,
        accepts_file=True,
    ),
    AgentEntry("pptx", "PowerPoint", "PowerPoint builder agent stream", pptx.build),
    AgentEntry("deep", "Deep research", "Deep research agent stream", deep.build),
    AgentEntry("skills", "Skills", "Skills agent stream", skills.build, accepts_file=True),
    AgentEntry(
        "host", "Remote agents", "Host agent stream: delegates to remote A2A agents", host.build
    ),
)

BY_KIND = {entry.kind: entry for entry in AGENTS}


def build_agents(
    core: AgentCore, settings: Settings, entries: Iterable[AgentEntry] = AGENTS
) -> dict[str, BaseAgent]:
    """The agents of this build, by kind; kinds without a factory are left out (501)."""
    return {
        entry.kind: entry.factory(core, settings) for entry in entries if entry.factory is not None
    }
