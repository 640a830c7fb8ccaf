"""Slide thumbnails of a deck, where LibreOffice is installed: one small PNG per slide.

LibreOffice converts the deck to PDF (`soffice --headless --convert-to pdf`,
in a child process with a profile of its own, killed past its time limit
with the processes it started, which live in its own session), and pdfium
draws each page. Without `soffice`, or when either step fails,
there are simply no thumbnails: a preview never fails a deck.
"""

from __future__ import annotations

import asyncio
import io
import logging
import shutil
import tempfile
from pathlib import Path

import pypdfium2

from app.core.processes import kill_group

log = logging.getLogger(__name__)

THUMBNAIL_WIDTH = 480


def available() -> bool:
    return shutil.which("soffice") is not None


async def thumbnails(deck: bytes, limit_seconds: float) -> list[bytes]:
    """PNG bytes per slide; empty without LibreOffice or when the conversion fails."""
    soffice = shutil.which("soffice")
    if soffice is None:
        return []
    with tempfile.TemporaryDirectory(prefix="deck-preview-") as folder:
        work = Path(folder)
        (work / "deck.pptx").write_bytes(deck)
        command = [
            soffice,
            f"-env:UserInstallation={(work / 'profile').as_uri()}",
            "--headless",
            "--convert-to",
            "pdf",
            "--outdir",
            str(work),
            str(work / "deck.pptx"),
        ]
        process = await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(limit_seconds):
                await process.wait()
        except TimeoutError:
            log.warning("LibreOffice took over %gs to convert a deck", limit_seconds)
            return []
        finally:
            # Timed out, stopped with the turn, or done: `soffice` may have left
            # `oosplash` and `soffice.bin` behind, which killing it alone would not end.
            kill_group(process.pid)
            await process.wait()
        pdf = work / "deck.pdf"
        if process.returncode != 0 or not pdf.is_file():
            log.warning("LibreOffice could not convert a deck (exit %s)", process.returncode)
            return []
        return await asyncio.to_thread(_pages, pdf)


def _pages(pdf: Path) -> list[bytes]:
    document = pypdfium2.PdfDocument(str(pdf))
    try:
        images = []
        for page in document:
            scale = THUMBNAIL_WIDTH / page.get_width()
            image = page.render(scale=scale).to_pil()
            out = io.BytesIO()
            image.save(out, format="PNG", optimize=True)
            images.append(out.getvalue())
        return images
    finally:
        document.close()
