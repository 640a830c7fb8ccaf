"""The document search tool: one uploaded file's passages, for an agent to read and cite.

Bound to one file of one user when an agent builds it for a turn. Each
passage goes to the model labelled with its location (page, paragraph or
lines) so the answer can cite it, and to the user as a reference pointing
at the file's download URL and that place in it. A small file comes back
whole. A file with no readable text answers an error the model (and the
file agent) can pass on, rather than an empty result to answer from.
"""

from __future__ import annotations

from typing import Any

from app.core.events import Reference
from app.core.tools import ToolSchema
from app.documents.library import DocumentLibrary
from app.store.base import FileChunk
from app.store.models import StoredFile
from app.tools.base import ToolContext, ToolOutput
from app.tools.untrusted import untrusted

REFERENCE_EXCERPT_CHARS = 500

SCHEMA = ToolSchema(
    name="search_document",
    description=(
        "Search the user's uploaded document. Returns the passages that best match the query, "
        "each with its location (page, paragraph or lines), or the whole text of a short "
        "document. Use words likely to appear in the document; search again with other words "
        "when the passages do not answer the question."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for in the document."}
        },
        "required": ["query"],
    },
)


class DocumentSearch:
    schema = SCHEMA

    def __init__(self, library: DocumentLibrary, user_id: str, file_id: str) -> None:
        self._library = library
        self._user_id = user_id
        self._file_id = file_id

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        file = await self._library.get(self._user_id, self._file_id)
        if file is None or file.status != "ready":
            return ToolOutput(unreadable_reason(file), is_error=True)
        query = str(args.get("query") or "").strip()
        if not query:
            return ToolOutput("The search needs a non-empty `query`.", is_error=True)
        found = await self._library.search(file, query)
        if found.whole:
            header = f'The whole text of "{file.file_name}":'
        elif found.matched:
            header = f'Passages of "{file.file_name}" matching "{query}", best first:'
        else:
            header = (
                f'No passage of "{file.file_name}" matches "{query}". '
                "The beginning of the document:"
            )
        blocks = [f"[{n}] {location(p)}\n{p.text}" for n, p in enumerate(found.passages, 1)]
        return ToolOutput(
            "\n\n".join([header, untrusted("\n\n".join(blocks), file.file_name)]),
            references=[passage_reference(file, p) for p in found.passages],
        )


def unreadable_reason(file: StoredFile | None) -> str:
    """Why a missing or not `ready` file cannot be searched, in a sentence for the user."""
    if file is None:
        return "The file is not available any more: it was deleted."
    if file.status == "processing":
        return f'"{file.file_name}" is still being processed; ask again in a moment.'
    return f'"{file.file_name}" cannot be read. {file.error or ""}'.strip()


def location(passage: FileChunk) -> str:
    """`page 3`, `pages 3-4`, `paragraph 12`, `lines 10-24`."""
    if passage.first == passage.last:
        return f"{passage.unit} {passage.first}"
    return f"{passage.unit}s {passage.first}-{passage.last}"


def passage_reference(file: StoredFile, passage: FileChunk) -> Reference:
    """The passage as the user sees it cited: the file's download URL at its place."""
    # The fragment names the place (pdf viewers open `#page=N` there) and the
    # passage, so two passages of one page stay two references.
    url = f"/file/download/{file.id}#{passage.unit}={passage.first}&passage={passage.seq}"
    text = passage.text
    if len(text) > REFERENCE_EXCERPT_CHARS:
        text = text[:REFERENCE_EXCERPT_CHARS].rstrip() + "…"
    return Reference(url, f"{file.file_name}, {location(passage)}", text)
