"""Web search through Tavily's HTTP API (`POST /search`).

Results go back to the model as a numbered list it can cite, and to the user
as references. Failures become an error result the model can read and work
around; they never carry the key or the raw upstream body. Each failure is
logged once at WARNING with the URL, the status and Tavily's own message
(bounded, key scrubbed), so a wrong key or URL can be told from an outage.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx2 as httpx
import orjson
from pydantic import SecretStr

from app.core.events import Reference
from app.core.tools import ToolSchema
from app.core.urls import public_url
from app.tools.base import ToolContext, ToolOutput

log = logging.getLogger(__name__)

_LOGGED_BODY_CHARS = 300
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

    def notice(self, args: dict[str, Any]) -> str | None:
        query = _query(args)
        return f"Searching the web: {query}\n" if query else None

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = _query(args)
        if not query:
            return ToolOutput("The search needs a non-empty `query`.", is_error=True)
        try:
            response = await self._client.post(
                self._url,
                json={"query": query, "max_results": self._max_results, "search_depth": "basic"},
                headers={"Authorization": f"Bearer {self._key.get_secret_value()}"},
            )
        except httpx.HTTPError as exc:
            self._log_failure("-", f"{type(exc).__name__}: {exc}")
            return ToolOutput(f"Web search failed ({type(exc).__name__}).", is_error=True)
        if response.status_code != 200:
            self._log_failure(response.status_code, response.text)
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

    def _log_failure(self, status: int | str, message: str) -> None:
        key = self._key.get_secret_value()
        if key:
            message = message.replace(key, "[redacted]")
        log.warning(
            "web search failed (url=%s status=%s): %s",
            public_url(self._url),
            status,
            message.strip()[:_LOGGED_BODY_CHARS],
        )


def _query(args: dict[str, Any]) -> str:
    return str(args.get("query") or "").strip()
