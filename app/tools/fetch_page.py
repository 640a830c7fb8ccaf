"""`fetch_page {url}`: the model reads a web page it found (or was given) before citing it.

The page is read by `PageReader` (page_reader.py: the outbound guard,
robots.txt, the cache, the per-host limit) as its title and main text.
The model gets them cut to `FETCH_MAX_CHARS`, between the untrusted-content
tags (a page saying "ignore your instructions" is a page saying so); the
URL joins the turn's references. A page that cannot be read is a tool
error the model reads and works around, never a failed turn.
"""

from __future__ import annotations

from typing import Any

from app.core.events import Reference
from app.core.tools import ToolSchema
from app.tools.base import ToolContext, ToolOutput
from app.tools.page_reader import Page, PageError, PageReader
from app.tools.untrusted import untrusted

FETCH_PAGE = "fetch_page"
EXCERPT_CHARS = 300
"""Of a read page, what its `reference` item carries: the start of its main text."""
SCHEMA = ToolSchema(
    name=FETCH_PAGE,
    description=(
        "Read a web page (HTML, PDF or text) by its URL: returns its title and main text. "
        "Use it on the most promising search results before citing them, or on a URL the "
        "user gave. Read several pages in parallel when that helps."
    ),
    parameters={
        "type": "object",
        "properties": {"url": {"type": "string", "description": "The http(s) URL to read."}},
        "required": ["url"],
    },
)


class FetchPage:
    schema = SCHEMA

    def __init__(self, reader: PageReader, max_chars: int) -> None:
        self.reader = reader
        """Shared with deep research, whose tasks read their search results through it."""
        self._max_chars = max_chars

    def notice(self, args: dict[str, Any]) -> str | None:
        url = _url(args)
        return f"Reading {url}\n" if url else None

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        url = _url(args)
        if not url:
            return ToolOutput("fetch_page needs a `url`.", is_error=True)
        try:
            page = await self.reader.read(url)
        except PageError as exc:
            return ToolOutput(f"The page could not be read: {exc}", is_error=True)
        return read_page(page, self._max_chars)


def read_page(page: Page, max_chars: int) -> ToolOutput:
    """The page as the model reads it (marked as data, cut) and as the turn cites it."""
    text = page.text[:max_chars]
    if len(page.text) > max_chars or page.cut:
        text += f"\n\n[The page goes on; only its first {len(text):,} characters are shown.]"
    body = f"Title: {page.title}\nURL: {page.url}\n\n{text}"
    excerpt = " ".join(page.text[:EXCERPT_CHARS].split())
    return ToolOutput(
        untrusted(body, f"web page: {page.url}"),
        references=[Reference(page.url, page.title, excerpt)],
    )


def _url(args: dict[str, Any]) -> str:
    return str(args.get("url") or "").strip()
