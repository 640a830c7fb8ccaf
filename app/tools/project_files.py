"""The `search_project_files` tool: the files attached to the turn's project, searched together.

Bound to the project's files as the turn started. The passages of all of them are
ranked together (`DocumentLibrary.search_files`) and each goes to the model labelled
with its file and place, and to the user as a reference to that place
(`/file/download/{fileId}#page=N&passage=S`), as the file agent's search does for one file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.tools import ToolSchema
from app.documents.library import DocumentLibrary
from app.tools.base import ToolContext, ToolOutput
from app.tools.documents import location, passage_reference, unreadable_reason
from app.tools.untrusted import untrusted

SEARCH_PROJECT_FILES = "search_project_files"
SCHEMA = ToolSchema(
    name=SEARCH_PROJECT_FILES,
    description=(
        "Search the files of the user's project. Returns the passages of all of them that "
        "best match the query, each with its file and location (page, paragraph or lines) "
        "to cite. Use words likely to appear in the files; search again with other words "
        "when the passages do not answer the question."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for in the files."}
        },
        "required": ["query"],
    },
)


class ProjectFileSearch:
    schema = SCHEMA
    read_only = True
    """It only reads the user's own files."""

    def __init__(self, library: DocumentLibrary, user_id: str, file_ids: Sequence[str]) -> None:
        self._library = library
        self._user_id = user_id
        self._file_ids = list(file_ids)

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = str(args.get("query") or "").strip()
        if not query:
            return ToolOutput("The search needs a non-empty `query`.", is_error=True)
        files, notes = [], []
        for file_id in self._file_ids:
            file = await self._library.get(self._user_id, file_id)
            if file is not None and file.status == "ready":
                files.append(file)
            elif file is not None:
                notes.append(unreadable_reason(file))
        if not files:
            return ToolOutput(
                " ".join(["The project has no file that can be searched.", *notes]), is_error=True
            )
        found = await self._library.search_files(files, query)
        names = ", ".join(f'"{f.file_name}"' for f in files)
        if not found:
            return ToolOutput(" ".join([f'No passage of {names} matches "{query}".', *notes]))
        blocks = [
            f"[{n}] {file.file_name}, {location(passage)}\n{passage.text}"
            for n, (file, passage) in enumerate(found, 1)
        ]
        header = f'Passages of the project\'s files matching "{query}", best first:'
        return ToolOutput(
            "\n\n".join([header, untrusted("\n\n".join(blocks), "project files"), *notes]),
            references=[passage_reference(file, passage) for file, passage in found],
        )
