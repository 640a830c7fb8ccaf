"""A deck's PDF and slide thumbnails, where LibreOffice is installed.

The deck goes the one way every page picture goes (documents/office.py):
LibreOffice makes a PDF and pdfium draws its pages, each in a child process
killed past its time limit with every process it started. That PDF is handed
over as the deck's PDF and its pages are the thumbnails, so LibreOffice runs
once a version. Without `soffice`, or when a step fails, there is no PDF
(`ConversionFailed` says why) and no thumbnails: neither ever fails a deck.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from app.documents import office

log = logging.getLogger(__name__)

THUMBNAIL_WIDTH = 480


class ConversionFailed(Exception):
    """No PDF of the deck: `str()` says why, in words for the user."""


def available() -> bool:
    return office.available()


async def thumbnails(deck: bytes, limit_seconds: float) -> list[bytes]:
    """PNG bytes per slide; empty without LibreOffice or when the conversion fails."""
    try:
        return (await _render(deck, "deck.pptx", limit_seconds, convert=True, draw=True))[1]
    except ConversionFailed:
        return []


async def to_pdf(deck: bytes, limit_seconds: float) -> bytes:
    """The deck as PDF, one page a slide; raises `ConversionFailed`."""
    return (await _render(deck, "deck.pptx", limit_seconds, convert=True, draw=False))[0]


async def pages(pdf: bytes, limit_seconds: float) -> list[bytes]:
    """A PNG of each page of the deck's PDF; raises `ConversionFailed`."""
    return (await _render(pdf, "deck.pdf", limit_seconds, convert=False, draw=True))[1]


async def _render(
    data: bytes, name: str, limit_seconds: float, *, convert: bool, draw: bool
) -> tuple[bytes, list[bytes]]:
    with tempfile.TemporaryDirectory(prefix="deck-preview-") as folder:
        work = Path(folder)
        (work / name).write_bytes(data)
        limits = office.RenderLimits(memory_bytes=None, seconds=limit_seconds)
        try:
            drawn = await office.render(
                work / name,
                work,
                convert=convert,
                pages=None if draw else [],
                width=THUMBNAIL_WIDTH,
                limits=limits,
            )
        except office.RenderFailed as exc:
            log.warning("no PDF or thumbnails for a deck: %s", exc)
            raise ConversionFailed(str(exc).rstrip(".")) from exc
        return drawn.pdf.read_bytes(), [drawn.images[n] for n in sorted(drawn.images)]
