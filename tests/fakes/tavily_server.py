"""A local stand-in for Tavily's search API (`POST /search`, documented JSON answer)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.server import serve

TOGETHER_SECONDS = 5.0
"""The longest a search waits for the others of its group (`together`) before answering alone."""


@dataclass
class FakeTavily:
    """Answers every query with `results_per_query` results whose URLs name the query."""

    results_per_query: int = 2
    queries: list[str] = field(default_factory=list)
    auth_headers: list[str] = field(default_factory=list)
    hang: bool = False
    """When set, searches never answer (to test stopping during a tool call)."""
    started: asyncio.Event = field(default_factory=asyncio.Event)
    fail_status: int | None = None
    """When set, searches answer this status with Tavily's error shape, naming the key sent."""
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a client gave up on a search that was hanging: the tool call was cancelled."""
    extra_results: list[Any] = field(default_factory=list)
    """Listed after the generated results, as they are (a search engine's odd or hostile ones)."""
    padding_bytes: int = 0
    """When set, answers carry this many bytes more, streamed (a provider gone wrong)."""
    together: int = 0
    """When set, searches answer in groups of this many, each once its group has all arrived:
    tool calls made in parallel are then all running at once, whatever the scheduling."""
    _arrivals: asyncio.Condition = field(default_factory=asyncio.Condition)
    base_url: str = ""

    async def _search(self, request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        query = str(body.get("query", ""))
        self.queries.append(query)
        self.auth_headers.append(request.headers.get("authorization", ""))
        self.started.set()
        if self.together:
            await self._with_the_group()
        if self.hang:
            # The body is read, so the next message only comes when the client leaves.
            while (await request.receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()
            return JSONResponse({}, status_code=499)
        if self.fail_status is not None:
            sent = request.headers.get("authorization", "")
            error = f"Unauthorized: invalid API key ({sent})."
            return JSONResponse({"detail": {"error": error}}, status_code=self.fail_status)
        slug = query.replace(" ", "-")
        results = [
            {
                "title": f"{query} result {n}",
                "url": f"https://example.test/{slug}/{n}",
                "content": f"Facts about {query}, number {n}.",
                "score": 0.9 - n / 10,
            }
            for n in range(1, self.results_per_query + 1)
        ]
        answer = {
            "query": query,
            "results": [*results, *self.extra_results],
            "response_time": 0.01,
        }
        if self.padding_bytes:
            return StreamingResponse(
                _padded(answer, self.padding_bytes), media_type="application/json"
            )
        return JSONResponse(answer)

    async def _with_the_group(self) -> None:
        """Wait until the group of the search that just arrived is whole (`together`)."""
        whole = -(-len(self.queries) // self.together) * self.together
        async with self._arrivals:
            self._arrivals.notify_all()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TOGETHER_SECONDS):
                    await self._arrivals.wait_for(lambda: len(self.queries) >= whole)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[FakeTavily]:
        app = Starlette(routes=[Route("/search", self._search, methods=["POST"])])
        async with serve(app, lifespan="off") as url:
            self.base_url = url
            yield self


async def _padded(answer: dict[str, Any], padding: int) -> AsyncIterator[bytes]:
    """`answer` with a `padding` field of that many bytes, a megabyte at a time."""
    yield orjson.dumps(answer)[:-1] + b', "padding": "'
    block = b"x" * (1024 * 1024)
    for start in range(0, padding, len(block)):
        yield block[: padding - start]
    yield b'"}'
