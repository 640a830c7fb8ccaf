"""What a deck costs to hand over: drawing it, its PDF (LibreOffice) and its thumbnails.

    .venv/bin/python -m bench.decks                  # 20 slides, 3 runs a template
    .venv/bin/python -m bench.decks --slides 10 --runs 1

For each shipped template and for a user's template (python-pptx's default
layouts, matched by their placeholders), a deck of `--slides` slides using
every slide kind is drawn with python-pptx (`render`), converted to PDF by
LibreOffice in a child process as the agent does (`pdf`, the start of
`soffice` included), and its pages drawn as thumbnails by pdfium
(`thumbnails`). Prints medians in seconds; needs `soffice`.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pypdf import PdfReader

from app.agents.pptx import preview
from app.agents.pptx.layouts import TemplateLayouts, match
from app.agents.pptx.render import render_deck
from app.agents.pptx.render_layouts import render_on_layouts
from app.agents.pptx.schema import DeckSchema
from app.agents.pptx.templates import TemplateLibrary
from app.config import Settings
from app.documents.extract import Budget
from app.documents.office import RenderLimits
from app.documents.previews import FilePreviews
from app.documents.readers import layouts
from app.store.blobs import LocalBlobStore
from tests.support.decks import deck
from tests.support.pptx_templates import company_template

USER_TEMPLATE = "yours"


def titles(count: int) -> list[str]:
    return [f"Slide {n}: where the figures come from" for n in range(1, count + 1)]


def drawers(count: int, folder: Path) -> dict[str, Callable[[], bytes]]:
    """How each template draws a deck of `count` slides, by template."""
    library = TemplateLibrary()
    schema = DeckSchema.model_validate(deck(titles(count)))
    found: dict[str, Callable[[], bytes]] = {
        code: partial(render_deck, library.path(code), spec, schema, never)
        for code, spec in library.templates.items()
    }
    template = company_template()
    path = folder / "template.pptx"
    path.write_bytes(template)
    read = TemplateLayouts.model_validate(layouts(path, Budget(128 * 2**20, 1000, 10**6)))
    _, plan = match(read, "file:bench", USER_TEMPLATE)
    own = DeckSchema.model_validate(deck(titles(count), own_template=True))
    found[USER_TEMPLATE] = partial(render_on_layouts, template, plan, own, never)
    return found


def never() -> bool:
    """A deadline that never comes: the bench times the whole drawing."""
    return False


async def measure(slides: int, runs: int, folder: Path) -> dict[str, dict[str, Any]]:
    """Median seconds of each stage, by template; the PDF's page count with them."""
    figures: dict[str, dict[str, Any]] = {}
    # As the service draws: one worker, the default memory cap of reading a document.
    memory = Settings.model_fields["file_parse_memory_mb"].default * 2**20
    previews = FilePreviews(LocalBlobStore(folder / "blobs"), RenderLimits(memory, 300), 1)
    for code, draw in drawers(slides, folder).items():
        times: dict[str, list[float]] = {"render": [], "pdf": [], "thumbnails": []}
        pages = 0
        for _ in range(runs):
            started = time.perf_counter()
            data = await asyncio.to_thread(draw)
            drawn = time.perf_counter()
            pdf = await preview.to_pdf(previews, data, 300)
            converted = time.perf_counter()
            await preview.pages(previews, pdf, 300)
            times["render"].append(drawn - started)
            times["pdf"].append(converted - drawn)
            times["thumbnails"].append(time.perf_counter() - converted)
            pages = len(PdfReader(io.BytesIO(pdf)).pages)
        figures[code] = {name: statistics.median(t) for name, t in times.items()} | {"pages": pages}
    return figures


def report(figures: dict[str, dict[str, Any]], slides: int) -> str:
    lines = [
        "| template | slides | PDF pages | render s | PDF (LibreOffice) s | thumbnails s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {code} | {slides} | {f['pages']} | {f['render']:.2f} | {f['pdf']:.2f}"
        f" | {f['thumbnails']:.2f} |"
        for code, f in figures.items()
    ]
    return "\n".join(lines)


async def main(slides: int, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-decks-") as folder:
        print(report(await measure(slides, runs, Path(folder)), slides))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--slides", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.slides, args.runs))
