"""A local web site for the page reader's tests: pages, PDFs, robots.txt, redirects, cookies.

    async with FakeSite().running() as site:
        site.add("/pump", html_page("Pump guide", "<p>Seven years.</p>"))
        ...  # read f"{site.base_url}/pump"
        assert site.requests[0].user_agent.startswith("dodo-agent")

Every request is recorded with what a site sees of the caller (its path, its
`User-Agent`, any `Cookie` or `Authorization` it sent). `hold` makes a
path's answers wait until released, counting how many wait at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.server import serve


@dataclass(frozen=True)
class Answer:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Seen:
    path: str
    user_agent: str
    cookie: str
    authorization: str


def html_page(title: str, main: str, *, charset: str = "utf-8") -> Answer:
    """A page as sites make them: its main text wrapped in navigation, a script, a style,
    a cookie banner and a footer, which a reader must leave out."""
    html = f"""<!doctype html><html><head><meta charset="{charset}"><title>{title}</title>
<style>body {{ font-family: sans-serif; }} .hidden-style-rule {{ color: red; }}</style>
<script>window.trackingScriptRan = true;</script></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/shop">Shop the catalogue</a></li></ul></nav>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve your experience.
<button>Accept all cookies</button></div>
<main><article>{main}</article></main>
<footer><p>Copyright 2026 Example Pumps Ltd. All rights reserved.</p></footer>
</body></html>"""
    return Answer(html.encode(charset), f"text/html; charset={charset}")


@dataclass
class FakeSite:
    pages: dict[str, Answer] = field(default_factory=dict)
    robots: str | None = None
    """The site's robots.txt; None answers 404 (no rules)."""
    requests: list[Seen] = field(default_factory=list)
    held: set[str] = field(default_factory=set)
    waiting: int = 0
    most_waiting: int = 0
    release: asyncio.Event = field(default_factory=asyncio.Event)
    base_url: str = ""

    def add(self, path: str, answer: Answer) -> str:
        self.pages[path] = answer
        return self.base_url + path

    def seen(self, path: str) -> list[Seen]:
        return [s for s in self.requests if s.path == path]

    async def _answer(self, request: Request) -> Response:
        path = request.url.path
        self.requests.append(
            Seen(
                path,
                request.headers.get("user-agent", ""),
                request.headers.get("cookie", ""),
                request.headers.get("authorization", ""),
            )
        )
        if path == "/robots.txt":
            if self.robots is None:
                return Response(b"not found", 404)
            return Response(self.robots.encode(), media_type="text/plain")
        if path in self.held:
            self.waiting += 1
            self.most_waiting = max(self.most_waiting, self.waiting)
            try:
                await self.release.wait()
            finally:
                self.waiting -= 1
        answer = self.pages.get(path)
        if answer is None:
            return Response(b"no such page", 404, media_type="text/plain")
        headers = {"content-type": answer.content_type, **answer.headers}
        return Response(answer.body, answer.status, headers=headers)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[FakeSite]:
        app = Starlette(routes=[Route("/{path:path}", self._answer)])
        async with serve(app, lifespan="off") as url:
            self.base_url = url
            yield self
