"""Slide thumbnails of a deck, where LibreOffice is installed: one small PNG per slide.

The deck goes the one way every page picture goes (documents/office.py):
LibreOffice makes a PDF and pdfium draws each page, in a child process
killed past its time limit with every process it started. Without
`soffice`, or when either step fails, there are simply no thumbnails: a
preview never fails a deck.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from app.documents import office

log = logging.getLogger(__name__)

THUMBNAIL_WIDTH = 480


def available() -> bool:
    return office.available()


async def thumbnails(deck: bytes, limit_seconds: float) -> list[bytes]:
    """PNG bytes per slide; empty without LibreOffice or when the conversion fails."""
    if not office.available():
        return []
    with tempfile.TemporaryDirectory(prefix="deck-preview-") as folder:
        work = Path(folder)
        (work / "deck.pptx").write_bytes(deck)
        limits = office.RenderLimits(memory_bytes=None, seconds=limit_seconds)
        try:
            drawn = await office.render(
                work / "deck.pptx",
                work,
                convert=True,
                pages=None,
                width=THUMBNAIL_WIDTH,
                limits=limits,
            )
        except office.RenderFailed as exc:
            log.warning("no thumbnails for a deck: %s", exc)
            return []
        return [drawn.images[n] for n in sorted(drawn.images)]
