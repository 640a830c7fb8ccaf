"""Web search through Tavily's HTTP API (`POST /search`).

Results go back to the model as a numbered list it can cite, and to the user
as references. Failures become an error result the model can read and work
around; they never carry the key or the raw upstream body.
"""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import orjson
from pydantic import SecretStr

from app.config import Settings
from app.core.events import Reference, ThinkingEvent
from app.core.tools import ToolSchema
from app.tools.base import ToolContext, ToolOutput

SCHEMA = ToolSchema(
    name="web_search",
    description=(
        "Search the web for current information. Use short, specific queries; "
        "call it several times in parallel for different aspects of a question."
    ),
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "The search query."}},
        "required": ["query"],
    },
)


class TavilySearch:
    schema = SCHEMA

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, api_key: SecretStr, max_results: int
    ) -> None:
        self._client = client
        self._url = base_url.rstrip("/") + "/search"
        self._key = api_key
        self._max_results = max_results

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = str(args.get("query") or "").strip()
        if not query:
            return ToolOutput("The search needs a non-empty `query`.", is_error=True)
        ctx.emit(ThinkingEvent(f"Searching the web: {query}\n"))
        try:
            response = await self._client.post(
                self._url,
                json={"query": query, "max_results": self._max_results, "search_depth": "basic"},
                headers={"Authorization": f"Bearer {self._key.get_secret_value()}"},
            )
        except httpx.HTTPError as exc:
            return ToolOutput(f"Web search failed ({type(exc).__name__}).", is_error=True)
        if response.status_code != 200:
            return ToolOutput(f"Web search failed (HTTP {response.status_code}).", is_error=True)
        try:
            results = orjson.loads(response.content).get("results") or []
        except (orjson.JSONDecodeError, AttributeError):
            return ToolOutput("Web search returned an unreadable answer.", is_error=True)
        references = [
            Reference(str(r.get("url", "")), str(r.get("title", "")), str(r.get("content", "")))
            for r in results
            if isinstance(r, dict) and r.get("url")
        ]
        if not references:
            return ToolOutput(f"No results for: {query}")
        lines = [
            f"[{n}] {ref.title}\nURL: {ref.url}\n{ref.content}"
            for n, ref in enumerate(references, 1)
        ]
        return ToolOutput("\n\n".join(lines), references=references)


def configured_search(client: httpx.AsyncClient, settings: Settings) -> TavilySearch | None:
    """The web search of these settings; None without a Tavily key (agents then do without)."""
    key = settings.tavily_api_key
    if not key.get_secret_value():
        return None
    return TavilySearch(client, settings.tavily_base_url, key, settings.tavily_max_results)
