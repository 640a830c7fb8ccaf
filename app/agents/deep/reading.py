"""Deep research reads what it finds: each task's searches come back with passages of the pages.

A snippet is what a search engine chose to show, not what the page says.
So a task's `web_search` is wrapped: after the results come, the most
relevant of them (the engine's order) that the task has not read yet are
read whole through the page reader, up to `DEEP_FETCH_PER_TASK` pages for
the task, at most `DEEP_FETCH_PARALLEL` at once for the whole turn (and the
reader's own limits for the instance). Of each page, the passage that best
matches the task and the query (BM25, as for uploads) is added to the
results the model reads, under the result's number, and becomes that
result's `reference` content: the report cites the passage it was given.

A page that cannot be read is skipped: the snippet stays, and the task goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

from app.core.events import Reference
from app.core.tools import ToolSchema
from app.documents.extract import Document, Section
from app.documents.retrieval import Bm25Index, chunk, rank
from app.tools.base import Tool, ToolContext, ToolOutput
from app.tools.page_reader import PageError, PageReader
from app.tools.untrusted import untrusted

log = logging.getLogger(__name__)

PASSAGE_CHARS = 500
"""A cited passage's length: what the state keeps of each source (graph.SOURCE_EXCERPT_CHARS)."""
PASSAGE_OVERLAP_CHARS = 100


@dataclass(slots=True)
class TurnReading:
    """One research turn's reading: the reader, each task's budget, the turn's parallel cap."""

    reader: PageReader
    per_task: int
    at_once: asyncio.Semaphore

    def for_task(self, search: Tool, focus: str) -> ReadingSearch:
        return ReadingSearch(search, self, focus)


@dataclass(slots=True)
class ReadingSearch:
    """`web_search` as one task sees it: the results, then passages of the best pages read."""

    search: Tool
    reading: TurnReading
    focus: str
    """What the task is after (its title and goal): with the query, it picks each passage."""
    read: set[str] = field(default_factory=set)
    """URLs this task has read (or tried to): each is read once, and counts once."""

    @property
    def schema(self) -> ToolSchema:
        return self.search.schema

    def notice(self, args: dict[str, Any]) -> str | None:
        notice = getattr(self.search, "notice", None)
        return notice(args) if callable(notice) else None

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        found = await self.search(args, ctx)
        left = self.reading.per_task - len(self.read)
        if found.is_error or left <= 0:
            return found
        numbered = list(enumerate(found.references, 1))
        chosen = [(n, ref) for n, ref in numbered if ref.url not in self.read][:left]
        if not chosen:
            return found
        self.read.update(ref.url for _, ref in chosen)
        query = f"{args.get('query') or ''} {self.focus}"
        passages = await asyncio.gather(*(self._passage(ref, query) for _, ref in chosen))
        quoted = {ref.url: p for (_, ref), p in zip(chosen, passages, strict=True) if p}
        if not quoted:
            return found
        lines = [
            f"[{n}] {ref.title}\nURL: {ref.url}\n{quoted[ref.url]}"
            for n, ref in chosen
            if ref.url in quoted
        ]
        text = found.text + "\n\n" + untrusted("\n\n".join(lines), "passages of the pages read")
        references = [
            dataclasses.replace(ref, content=quoted[ref.url]) if ref.url in quoted else ref
            for ref in found.references
        ]
        return ToolOutput(text, references=references)

    async def _passage(self, ref: Reference, query: str) -> str | None:
        try:
            async with self.reading.at_once:
                page = await self.reading.reader.read(ref.url)
        except PageError as exc:
            log.info("deep research could not read %s: %s", ref.url, exc)
            return None
        return await asyncio.to_thread(best_passage, page.text, query)


def best_passage(text: str, query: str) -> str | None:
    """The passage of `text` that best matches `query`; its start when none matches."""
    if not text.strip():
        return None
    document = Document("line", [Section(1, 1, text)])
    passages = chunk(document, PASSAGE_CHARS, PASSAGE_OVERLAP_CHARS, PASSAGE_CHARS)
    order = rank(Bm25Index([p.text for p in passages]), query, 1)
    return passages[order[0] if order else 0].text
