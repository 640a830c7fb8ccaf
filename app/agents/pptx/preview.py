"""A deck's PDF and slide thumbnails, where LibreOffice is installed.

The deck goes the way every page picture goes (documents/previews.py):
LibreOffice makes a PDF and pdfium draws its pages, each in a child process
with reading's memory cap, killed past the deck's time limit
(`PPTX_RENDER_TIMEOUT_SECONDS`) with every process it started, and at most
`PREVIEW_WORKERS` of them at once, previews and reports' PDFs included. That
PDF is handed over as the deck's PDF and its pages are the thumbnails, so
LibreOffice runs once a version. Without `soffice`, or when a step fails,
there is no PDF (`ConversionFailed` says why) and no thumbnails: neither ever
fails a deck.
"""

from __future__ import annotations

import logging

from app.documents.previews import FilePreviews, PreviewFailed

log = logging.getLogger(__name__)

THUMBNAIL_WIDTH = 480


class ConversionFailed(Exception):
    """No PDF of the deck: `str()` says why, in words for the user."""


async def to_pdf(previews: FilePreviews, deck: bytes, limit_seconds: float) -> bytes:
    """The deck as PDF, one page a slide; raises `ConversionFailed`."""
    try:
        return await previews.pdf_of(deck, ".pptx", limit_seconds)
    except PreviewFailed as exc:
        raise _failed(exc) from exc


async def pages(previews: FilePreviews, pdf: bytes, limit_seconds: float) -> list[bytes]:
    """A PNG of each page of the deck's PDF; raises `ConversionFailed`."""
    try:
        return await previews.pictures_of(pdf, THUMBNAIL_WIDTH, limit_seconds)
    except PreviewFailed as exc:
        raise _failed(exc) from exc


def _failed(exc: PreviewFailed) -> ConversionFailed:
    log.warning("no PDF or thumbnails for a deck: %s", exc)
    return ConversionFailed(str(exc).rstrip("."))
