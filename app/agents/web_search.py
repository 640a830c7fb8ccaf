"""The web-search agent (`/agent/chat/stream`): ReAct with web search and `fetch_page`.

Without a Tavily key it still answers, from the model alone, and says so.
A picture attached to the turn (`fileId`) joins the question: as an image
for a vision model, as the text read from it for another (agents/picture.py).
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
{reading}- Answer in the language of the question, in Markdown, concisely.
"""
    + UNTRUSTED_CONTENT_RULE
)

NO_SEARCH_PROMPT = """You are a helpful assistant. Today is {today}.
Web search is not available, so answer from your own knowledge and say when you are unsure.
Answer in the language of the question, in Markdown, concisely."""
READ_RESULTS = (
    "- Before relying on a result, read the most relevant pages with fetch_page (a few, in\n"
    "  parallel): a snippet is not the page.\n"
)
READ_PROMPT = (
    "\nWhen the user gives a URL, read it with fetch_page before answering about it.\n"
    + UNTRUSTED_CONTENT_RULE
)


class WebSearchAgent(ReActAgent):
    agent_type = "chat"
    reads_pictures = True

    def __init__(self, core: AgentCore, search: Tool | None, reader: Tool | None = None) -> None:
        super().__init__(core)
        self._search = search
        self._reader = reader

    def system_prompt(self, turn: Turn) -> str:
        today = datetime.now(UTC).date().isoformat()
        if self._search:
            reading = READ_RESULTS if self._reader is not None else ""
            return SYSTEM_PROMPT.format(today=today, reading=reading)
        if self._reader is not None:
            return (NO_SEARCH_PROMPT + READ_PROMPT).format(today=today)
        return NO_SEARCH_PROMPT.format(today=today)

    def tools(self, turn: Turn) -> Sequence[Tool]:
        return [tool for tool in (self._search, self._reader) if tool is not None]

    def notices(self, turn: Turn) -> list[str]:
        if self._search:
            return []
        return [
            "Web search is not configured (no TAVILY_API_KEY): answering from the model alone.\n"
        ]


def build(core: AgentCore, settings: Settings) -> WebSearchAgent:
    """With a Tavily key, the agent searches; without one, it answers from the model alone."""
    return WebSearchAgent(core, core.search, core.fetch_page)
