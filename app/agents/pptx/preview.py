"""A deck's PDF and slide thumbnails, where LibreOffice is installed.

LibreOffice converts the deck to PDF (`soffice --headless --convert-to pdf`,
in a child process with a profile of its own, killed past its time limit
with the processes it started, which live in its own session): that PDF is
handed over as the deck's PDF, and pdfium draws each of its pages as a
thumbnail, so LibreOffice runs once a version. Without `soffice`, or when a
step fails, there is no PDF (`ConversionFailed` says why) and no
thumbnails: neither ever fails a deck.
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


class ConversionFailed(Exception):
    """No PDF of the deck: `str()` says why, in words for the user."""


async def thumbnails(deck: bytes, limit_seconds: float) -> list[bytes]:
    """PNG bytes per slide; empty without LibreOffice or when the conversion fails."""
    try:
        pdf = await to_pdf(deck, limit_seconds)
    except ConversionFailed:
        return []
    return await pages(pdf)


async def pages(pdf: bytes) -> list[bytes]:
    """A PNG of each page of a PDF that LibreOffice made (so no untrusted PDF)."""
    return await asyncio.to_thread(_pages, pdf)


async def to_pdf(deck: bytes, limit_seconds: float) -> bytes:
    """The deck as PDF, one page a slide; raises `ConversionFailed`."""
    soffice = shutil.which("soffice")
    if soffice is None:
        raise ConversionFailed("LibreOffice (soffice) is not installed on the server")
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
            raise ConversionFailed(f"LibreOffice took over {limit_seconds:g}s") from None
        finally:
            # Timed out, stopped with the turn, or done: `soffice` may have left
            # `oosplash` and `soffice.bin` behind, which killing it alone would not end.
            kill_group(process.pid)
            await process.wait()
        pdf = work / "deck.pdf"
        if process.returncode != 0 or not pdf.is_file():
            log.warning("LibreOffice could not convert a deck (exit %s)", process.returncode)
            raise ConversionFailed(f"LibreOffice could not convert it (exit {process.returncode})")
        return pdf.read_bytes()


def _pages(pdf: bytes) -> list[bytes]:
    document = pypdfium2.PdfDocument(pdf)
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
