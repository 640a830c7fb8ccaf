"""The web-search agent (`/agent/chat/stream`): ReAct with a Tavily search tool.

Without a Tavily key it still answers, from the model alone, and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from app.agents.react import ReActAgent
from app.agents.turn import AgentCore, Turn
from app.config import Settings
from app.tools.base import Tool
from app.tools.untrusted import UNTRUSTED_CONTENT_RULE

SYSTEM_PROMPT = (
    """You are a research assistant that answers with current, sourced facts.
Today is {today}.
- Search the web when the question needs facts you are not sure of or recent information;
  search several aspects in parallel when that helps.
- Cite sources inline as [n] using the numbers in the search results.
- Answer in the language of the question, in Markdown, concisely.
"""
    + UNTRUSTED_CONTENT_RULE
)

NO_SEARCH_PROMPT = """You are a helpful assistant. Today is {today}.
Web search is not available, so answer from your own knowledge and say when you are unsure.
Answer in the language of the question, in Markdown, concisely."""


class WebSearchAgent(ReActAgent):
    agent_type = "chat"

    def __init__(self, core: AgentCore, search: Tool | None) -> None:
        super().__init__(core)
        self._search = search

    def system_prompt(self, turn: Turn) -> str:
        template = SYSTEM_PROMPT if self._search else NO_SEARCH_PROMPT
        return template.format(today=datetime.now(UTC).date().isoformat())

    def tools(self, turn: Turn) -> Sequence[Tool]:
        return (self._search,) if self._search else ()

    def notices(self, turn: Turn) -> list[str]:
        if self._search:
            return []
        return [
            "Web search is not configured (no TAVILY_API_KEY): answering from the model alone.\n"
        ]


def build(core: AgentCore, settings: Settings) -> WebSearchAgent:
    """With a Tavily key, the agent searches; without one, it answers from the model alone."""
    return WebSearchAgent(core, core.search)
