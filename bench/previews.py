"""What a page preview and a report's files cost: seconds to draw one page, cold and kept.

    .venv/bin/python -m bench.previews [--pages 20] [--repeats 3]

A pdf and a docx of `--pages` pages (fpdf2 and python-docx, text on each
page) are stored in a fresh blob store, and `FilePreviews` (the code behind
`GET /file/preview`) draws them with the default limits: the first page of a
file never previewed (a docx: LibreOffice makes the PDF, then pdfium draws;
the child's start included), then the last page (the PDF kept, only drawing),
then the first again (kept: a blob read). A research report's files are timed
too: the .docx written from Markdown, and its PDF by LibreOffice. Each figure
is the median of `--repeats` fresh runs, in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import docx
from docx.enum.text import WD_BREAK

from app.documents.library import LibrarySettings
from app.documents.office import RenderLimits, available
from app.documents.previews import FilePreviews
from app.documents.report import CitedSource, report_docx
from app.store.blobs import LocalBlobStore
from app.store.models import StoredFile
from tests.support.documents import pdf_bytes

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_TEXT = (
    "The heat pump moves heat from the outside air into the house; its coefficient of "
    "performance stays above three down to minus seven degrees. "
) * 8


def docx_of(pages: int) -> bytes:
    document = docx.Document()
    for n in range(1, pages + 1):
        document.add_heading(f"Section {n}", level=1)
        document.add_paragraph(_TEXT)
        if n < pages:
            document.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def report_of(sections: int) -> tuple[str, list[CitedSource]]:
    body = "\n\n".join(
        f"## Finding {n}\n\n{_TEXT} [{n}]\n\n- one point\n- another point\n\n"
        "| region | share |\n| --- | --- |\n| North | 40% |"
        for n in range(1, sections + 1)
    )
    sources = [CitedSource(n, f"Source {n}", f"https://example.test/{n}") for n in range(1, 11)]
    return f"# Heat pumps\n\n{body}", sources


def stored(key: str, mime_type: str, size: int) -> StoredFile:
    now = datetime.now(UTC)
    return StoredFile(
        id=key.rsplit("/", 1)[-1],
        user_id="bench",
        file_name="bench",
        mime_type=mime_type,
        size=size,
        blob_key=key,
        status="ready",
        create_time=now,
        update_time=now,
    )


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def preview_run(data: bytes, mime_type: str, pages: int) -> dict[str, float]:
    """One file never previewed: its first page, its last, its first again."""
    settings = LibrarySettings.defaults()
    limits = RenderLimits(settings.parse_memory_mb * 1024 * 1024, settings.parse_seconds)
    with tempfile.TemporaryDirectory() as folder:
        blobs = LocalBlobStore(Path(folder))
        await blobs.put("uploads/bench", io.BytesIO(data), len(data))
        file = stored("uploads/bench", mime_type, len(data))
        previews = FilePreviews(blobs, limits, settings.preview_workers)
        return {
            "first": await timed(lambda: previews.page(file, 1)),
            "other": await timed(lambda: previews.page(file, pages)),
            "kept": await timed(lambda: previews.page(file, 1)),
        }


async def report_run(sections: int) -> dict[str, float]:
    """A report's .docx from its Markdown, then its PDF."""
    settings = LibrarySettings.defaults()
    limits = RenderLimits(settings.parse_memory_mb * 1024 * 1024, settings.parse_seconds)
    markdown, sources = report_of(sections)
    with tempfile.TemporaryDirectory() as folder:
        previews = FilePreviews(LocalBlobStore(Path(folder)), limits, 1)
        started = time.perf_counter()
        data = await asyncio.to_thread(
            report_docx, "How big is the heat pump market?", markdown, sources, date.today()
        )
        written = time.perf_counter() - started
        pdf = await timed(lambda: previews.pdf_of(data, ".docx"))
    return {"docx": written, "pdf": pdf}


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


async def measure(pages: int, repeats: int) -> dict[str, Any]:
    if not available():
        raise SystemExit("Previews of office files need LibreOffice: run scripts/install-office")
    pdf = pdf_bytes([_TEXT] * pages)
    word = docx_of(pages)
    return {
        "pages": pages,
        "pdf": medians([await preview_run(pdf, "application/pdf", pages) for _ in range(repeats)]),
        "docx": medians([await preview_run(word, DOCX_MIME, pages) for _ in range(repeats)]),
        "report": medians([await report_run(pages) for _ in range(repeats)]),
    }


def report(figures: dict[str, Any]) -> str:
    pages = figures["pages"]
    lines = [
        f"| {pages}-page file | first page, never previewed | page {pages} next | page 1 kept |",
        "| --- | --- | --- | --- |",
    ]
    for kind in ("pdf", "docx"):
        f = figures[kind]
        kept_ms = f["kept"] * 1000
        lines.append(f"| {kind} | {f['first']:.2f} s | {f['other']:.2f} s | {kept_ms:.1f} ms |")
    r = figures["report"]
    lines += [
        "",
        f"| research report ({pages} sections) | seconds |",
        "| --- | --- |",
        f"| .docx written from the Markdown | {r['docx']:.3f} |",
        f"| its PDF by LibreOffice | {r['pdf']:.2f} |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(report(asyncio.run(measure(args.pages, args.repeats))))
