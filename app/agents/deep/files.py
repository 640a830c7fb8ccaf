"""A finished report handed over as files too: a Word document and its PDF (`DEEP_REPORT_FORMATS`).

The .docx is written from the report's Markdown (documents/report.py); the
PDF is LibreOffice's of that .docx, drawn under the limits of document
reading (documents/previews.py). Both are generated files of the
conversation, each a `file` event. A PDF that cannot be made (no
LibreOffice, a limit) is a `file` event with `status: failed` and the
reason: the report, its .docx and the rest of the turn stand.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

from app.core.events import FileEvent
from app.documents.library import DocumentLibrary, generated_event
from app.documents.previews import PreviewFailed
from app.documents.report import CitedSource, report_docx

log = logging.getLogger(__name__)

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PDF_MIME = "application/pdf"
NAME_CHARS = 80
"""Of the question, what names the files."""
FORMATS = ("docx", "pdf")


def report_formats(setting: str) -> frozenset[str]:
    """`DEEP_REPORT_FORMATS` as a set: `docx`, `pdf`; `none` or empty: none."""
    listed = {part.strip() for part in setting.split(",")} - {"", "none"}
    return frozenset(listed & set(FORMATS))


class ReportFiles:
    def __init__(self, documents: DocumentLibrary, formats: frozenset[str]) -> None:
        self._documents = documents
        self._formats = formats

    @property
    def wanted(self) -> bool:
        return bool(self._formats)

    async def hand_over(
        self,
        user_id: str,
        conversation_id: str,
        question: str,
        report: str,
        sources: Sequence[CitedSource],
    ) -> AsyncIterator[FileEvent]:
        """Store the report's files and yield their `file` events, the .docx first."""
        written = datetime.now(UTC).date()
        data = await asyncio.to_thread(report_docx, question, report, sources, written)
        stem = file_stem(question)
        documents = self._documents
        if "docx" in self._formats:
            stored = await documents.add_generated(
                user_id, conversation_id, f"{stem}.docx", data, DOCX_MIME
            )
            yield generated_event(stored)
        if "pdf" not in self._formats:
            return
        try:
            pdf = await documents.previews.pdf_of(data, ".docx")
        except PreviewFailed as exc:
            log.warning("no PDF of a report: %s", exc)
            unmade = await documents.add_unmade(
                user_id, conversation_id, f"{stem}.pdf", PDF_MIME, f"No PDF was made: {exc}"
            )
            yield generated_event(unmade)
            return
        stored = await documents.add_generated(
            user_id, conversation_id, f"{stem}.pdf", pdf, PDF_MIME
        )
        yield generated_event(stored)


def file_stem(question: str) -> str:
    """The files' name: the question on one line, without path separators, cut short."""
    words = re.sub(r"[\s/\\]+", " ", question).strip(" .?？!！")
    return words[:NAME_CHARS].rstrip() or "report"
