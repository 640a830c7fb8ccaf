"""Which agent serves which stream path: one line per agent.

The key is the path segment of `/agent/{kind}/stream` and the stored
`agent_type`. Kinds the contract names but that are not built yet answer 501.
"""

from __future__ import annotations

from app.agents.base import AgentDeps, BaseAgent
from app.agents.file_qa import FileQaAgent
from app.agents.web_search import WebSearchAgent

AGENT_KINDS = ("chat", "file", "pptx", "deep", "skills")

AGENTS: dict[str, type[BaseAgent]] = {
    WebSearchAgent.agent_type: WebSearchAgent,
    FileQaAgent.agent_type: FileQaAgent,
}


def build_agents(deps: AgentDeps) -> dict[str, BaseAgent]:
    return {kind: cls(deps) for kind, cls in AGENTS.items()}
