"""Web search through Tavily's HTTP API (`POST /search`).

Results go back to the model as a numbered list it can cite, and to the user
as references. Failures become an error result the model can read and work
around; they never carry the key or the raw upstream body. Each failure is
logged once at WARNING with the URL, the status and Tavily's own message
(bounded, key scrubbed), so a wrong key or URL can be told from an outage.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any

import httpx2
import orjson
from pydantic import SecretStr

from app.core.events import Reference
from app.core.tools import ToolSchema
from app.core.urls import public_url
from app.tools.base import ToolContext, ToolOutput
from app.tools.untrusted import untrusted

log = logging.getLogger(__name__)

_LOGGED_BODY_CHARS = 300
MAX_RESPONSE_BYTES = 2 * 1024 * 1024
"""Most of a search answer read: five results are tens of KB, so more means a broken upstream."""
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


class WebSearch(ABC):
    """`web_search` as the model sees it, whichever service answers it."""

    schema = SCHEMA

    def notice(self, args: dict[str, Any]) -> str | None:
        query = _query(args)
        return f"Searching the web: {query}\n" if query else None

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = _query(args)
        if not query:
            return ToolOutput("The search needs a non-empty `query`.", is_error=True)
        return await self.search(query)

    @abstractmethod
    async def search(self, query: str) -> ToolOutput:
        """The results of a non-empty query, or an error result the model can read."""


class TavilySearch(WebSearch):
    def __init__(
        self, client: httpx2.AsyncClient, base_url: str, api_key: SecretStr, max_results: int
    ) -> None:
        self._client = client
        self._url = base_url.rstrip("/") + "/search"
        self._key = api_key
        self._max_results = max_results

    async def search(self, query: str) -> ToolOutput:
        try:
            async with self._client.stream(
                "POST",
                self._url,
                json={"query": query, "max_results": self._max_results, "search_depth": "basic"},
                headers={"Authorization": f"Bearer {self._key.get_secret_value()}"},
            ) as response:
                content = await _read_at_most(response, MAX_RESPONSE_BYTES)
        except httpx2.HTTPError as exc:
            self._log_failure("-", f"{type(exc).__name__}: {exc}")
            return ToolOutput(f"Web search failed ({type(exc).__name__}).", is_error=True)
        if response.status_code != 200:
            self._log_failure(response.status_code, (content or b"").decode("utf-8", "replace"))
            return ToolOutput(f"Web search failed (HTTP {response.status_code}).", is_error=True)
        if content is None:
            self._log_failure(200, f"an answer of more than {MAX_RESPONSE_BYTES} bytes")
            return ToolOutput("Web search returned an answer too large to read.", is_error=True)
        try:
            results = orjson.loads(content).get("results") or []
        except (orjson.JSONDecodeError, AttributeError):
            return ToolOutput("Web search returned an unreadable answer.", is_error=True)
        return found(query, Reference.listed(results))

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


async def _read_at_most(response: httpx2.Response, limit: int) -> bytes | None:
    """The body, or None as soon as it passes `limit` bytes (the rest is never read)."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def _query(args: dict[str, Any]) -> str:
    return str(args.get("query") or "").strip()


def found(query: str, references: list[Reference]) -> ToolOutput:
    """Results as the model cites them (`[n]`) and as the turn's references."""
    if not references:
        return ToolOutput(f"No results for: {query}")
    lines = [
        f"[{n}] {ref.title}\nURL: {ref.url}\n{ref.content}" for n, ref in enumerate(references, 1)
    ]
    return ToolOutput(untrusted("\n\n".join(lines), f"web search: {query}"), references=references)
