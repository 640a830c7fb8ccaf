"""What reading costs: pages a second through `fetch_page`, and seconds a page of OCR.

    .venv/bin/python -m bench.reading [--pages 40] [--parallel 8] [--ocr-pages 4]

Pages: a local site (tests/fakes/page_server.py, uvicorn in this process)
serves HTML articles of about 100 KB and 2 MB, wrapped in navigation, a
script, a cookie banner and a footer as sites make them. Each is read
`--pages` times through the `fetch_page` tool (the outbound guard, robots.txt
off, the cache off so every read fetches and extracts), one at a time and
`--parallel` at once; pages a second is reads over wall time.

OCR: a PDF of `--ocr-pages` scanned pages (typed lines drawn by Pillow, a
picture per page, no text layer) and a PNG photo of a page, read by the
isolated reader with Tesseract (OCR_LANGS eng+chi_sim); seconds a page is
the wall time (the child's start included) over the pages.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from app.config import Settings
from app.documents.extract import PDF, PNG
from app.documents.isolated import extract_isolated
from app.documents.library import LibrarySettings
from app.documents.ocr import tesseract_path
from app.tools.base import ToolContext
from app.tools.fetch_page import FetchPage
from app.tools.page_reader import PageReader
from tests.fakes.page_server import FakeSite, html_page
from tests.support.documents import mixed_pdf_bytes, text_picture

SIZES = {"100 KB": 100 * 1024, "2 MB": 2 * 1024 * 1024}
_PARAGRAPH = (
    "<h2>Section {n}</h2><p>Heat pump {n} moves heat from the outside air into the house; "
    "its coefficient of performance stays above three down to minus seven degrees, and its "
    "compressor runs quietly at night. Installers check the refrigerant, the defrost cycle "
    "and the water flow before the warranty of seven years begins.</p>"
)
_LINES = [
    "The warranty of the pump lasts seven years.",
    "Frost damage is not covered by the warranty.",
    "Service the unit once a year and clean its filter.",
]


def article(size: int) -> str:
    """The main text of an article of about `size` bytes of HTML, sections numbered."""
    parts: list[str] = []
    total = 0
    n = 0
    while total < size:
        n += 1
        part = _PARAGRAPH.format(n=n)
        parts.append(part)
        total += len(part)
    return "".join(parts)


async def read_pages(tool: FetchPage, url: str, count: int, parallel: int) -> float:
    """Pages a second: `count` reads of `url`, `parallel` at a time."""
    context = ToolContext("bench", "bench", lambda event: None)
    gate = asyncio.Semaphore(parallel)

    async def one() -> None:
        async with gate:
            output = await tool({"url": url}, context)
        if output.is_error:
            raise RuntimeError(output.text)

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(count)))
    return count / (time.perf_counter() - started)


async def measure_pages(count: int, parallel: int) -> dict[str, dict[str, float]]:
    settings = Settings(
        _env_file=None,
        outbound_allowlist="127.0.0.1",
        fetch_cache_seconds=0,
        fetch_respect_robots=False,
        fetch_per_host=parallel,
        fetch_max_parallel=parallel,
    )
    figures: dict[str, dict[str, float]] = {}
    async with FakeSite().running() as site, PageReader.open(settings) as reader:
        tool = FetchPage(reader, settings.fetch_max_chars)
        for label, size in SIZES.items():
            url = site.add(f"/{size}", html_page(f"Article of {label}", article(size)))
            figures[label] = {
                "bytes": float(len(site.pages[f"/{size}"].body)),
                "one_at_a_time": await read_pages(tool, url, count, 1),
                "parallel": await read_pages(tool, url, count, parallel),
            }
    return figures


async def measure_ocr(pages: int) -> dict[str, float]:
    """Seconds a page: a scanned PDF of `pages` pages, and one PNG photo of a page."""
    parsing = LibrarySettings.defaults().parsing
    if parsing.ocr is None or not tesseract_path():
        raise SystemExit("OCR needs Tesseract: run scripts/install-ocr")
    with tempfile.TemporaryDirectory() as folder:
        scan = Path(folder) / "scan.pdf"
        scan.write_bytes(mixed_pdf_bytes([(line, True) for line in _LINES * pages][:pages]))
        photo = Path(folder) / "photo.png"
        photo.write_bytes(text_picture(_LINES))
        started = time.perf_counter()
        document = await extract_isolated(scan, PDF, parsing)
        pdf_seconds = (time.perf_counter() - started) / pages
        if len(document.sections) != pages:
            raise RuntimeError(f"OCR read {len(document.sections)} of {pages} pages")
        started = time.perf_counter()
        await extract_isolated(photo, PNG, parsing)
        png_seconds = time.perf_counter() - started
    return {"scanned_pdf": pdf_seconds, "png": png_seconds}


async def measure(count: int, parallel: int, ocr_pages: int) -> dict[str, Any]:
    return {
        "pages": await measure_pages(count, parallel),
        "ocr": await measure_ocr(ocr_pages),
        "parallel": parallel,
    }


def report(figures: dict[str, Any]) -> str:
    lines = [
        f"| page | HTML bytes | pages/s, one at a time | pages/s, {figures['parallel']} at once |",
        "| --- | --- | --- | --- |",
    ]
    for label, page in figures["pages"].items():
        lines.append(
            f"| {label} | {int(page['bytes']):,} | {page['one_at_a_time']:.1f} "
            f"| {page['parallel']:.1f} |"
        )
    ocr = figures["ocr"]
    lines += [
        "",
        "| OCR (eng+chi_sim, 300 DPI) | seconds a page |",
        "| --- | --- |",
        f"| scanned PDF page | {ocr['scanned_pdf']:.2f} |",
        f"| PNG photo of a page | {ocr['png']:.2f} |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=40, help="reads of each page size")
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--ocr-pages", type=int, default=4)
    args = parser.parse_args()
    print(report(asyncio.run(measure(args.pages, args.parallel, args.ocr_pages))))
