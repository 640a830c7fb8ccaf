"""Pages of documents as PDF and PNG: LibreOffice converts, pdfium draws, in a child with limits.

One path for every picture of a page: deck thumbnails, `/file/preview` and
the PDF of a research report. An office file (docx, pptx, xlsx) becomes a
PDF by `soffice --headless --convert-to pdf` (with a profile of its own in
the work folder); pdfium counts a PDF's pages and draws the ones asked for.
Both run in a fresh interpreter (`python -m app.documents.office`) whose
address space is capped (`RLIMIT_AS`, which `soffice` inherits) and which
leads a session of its own, so at the wall-time limit killing its group ends
`oosplash` and `soffice.bin` too (core/processes.py). Its environment holds
only `PATH`, a `HOME` in the work folder and the path to this package: no
secret of the server is within its reach.

    RenderFailed        a reason a user can read
    └── OfficeMissing   no `soffice` on this machine

Left out: legacy formats (.doc, .ppt, .xls), which the service never accepts.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import app
from app.core.processes import kill_group

_APP_ROOT = str(Path(app.__file__).resolve().parent.parent)
PDF_NAME = "document.pdf"
"""What the PDF LibreOffice made is called in the work folder."""


class RenderFailed(Exception):
    """Why pages could not be made, in words a user understands."""


class OfficeMissing(RenderFailed):
    pass


@dataclass(frozen=True, slots=True)
class RenderLimits:
    memory_bytes: int | None
    """The child's address space, LibreOffice's included; None: not capped."""
    seconds: float
    """Wall time for the whole job: conversion and drawing."""


@dataclass(frozen=True, slots=True)
class Rendered:
    pdf: Path
    """The PDF in the work folder (the source itself when it was one)."""
    page_count: int
    images: dict[int, bytes]
    """PNG bytes by page number (1-based), for the pages asked for that exist."""


def available() -> bool:
    return shutil.which("soffice") is not None


async def render(
    source: Path,
    work: Path,
    *,
    convert: bool,
    pages: Sequence[int] | None,
    width: int,
    limits: RenderLimits,
) -> Rendered:
    """Make `source` a PDF in `work` (when `convert`), count its pages and draw `pages`
    (None: all) `width` pixels wide. Raises `RenderFailed`, also when a limit stopped it."""
    if convert and not available():
        raise OfficeMissing(
            "LibreOffice is not installed on the server (scripts/install-office installs it)."
        )
    request = {
        "source": str(source),
        "work": str(work),
        "convert": convert,
        "soffice": shutil.which("soffice") if convert else None,
        "pages": None if pages is None else list(pages),
        "width": width,
        "memory_bytes": limits.memory_bytes,
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.documents.office",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"PYTHONPATH": _APP_ROOT, "PATH": os.environ.get("PATH", ""), "HOME": str(work)},
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(limits.seconds):
            output, _ = await child.communicate(json.dumps(request).encode())
    except TimeoutError:
        raise RenderFailed(
            f"Drawing the document took longer than {limits.seconds:g} seconds, the limit."
        ) from None
    finally:
        # Timed out, cancelled with its request, or done: what it started goes with it.
        kill_group(child.pid)
        await child.wait()
    try:
        answer = json.loads(output)
    except ValueError:
        answer = {"error": "The document could not be drawn: it may be damaged or too large."}
    if "error" in answer:
        raise RenderFailed(answer["error"])
    images = {n: (work / f"page-{n}.png").read_bytes() for n in answer["drawn"]}
    return Rendered(work / PDF_NAME if convert else source, answer["page_count"], images)


def _convert(soffice: str, source: Path, work: Path) -> Path:
    """LibreOffice's PDF of `source`, renamed `PDF_NAME`."""
    command = [
        soffice,
        f"-env:UserInstallation={(work / 'profile').as_uri()}",
        "--headless",
        "--convert-to",
        "pdf",
        "--outdir",
        str(work / "out"),
        str(source),
    ]
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    made = work / "out" / f"{source.stem}.pdf"
    if result.returncode != 0 or not made.is_file():
        raise RenderFailed(
            f"LibreOffice could not convert the document (exit {result.returncode}):"
            " it may be damaged, or need more memory than the limit."
        )
    return made.replace(work / PDF_NAME)


def _draw(pdf: Path, work: Path, pages: Sequence[int] | None, width: int) -> tuple[int, list[int]]:
    import pypdfium2

    try:
        document = pypdfium2.PdfDocument(str(pdf))
    except pypdfium2.PdfiumError as exc:
        raise RenderFailed("The PDF could not be read: it may be damaged.") from exc
    try:
        count = len(document)
        wanted = range(1, count + 1) if pages is None else [n for n in pages if 1 <= n <= count]
        for number in wanted:
            page = document[number - 1]
            # A page far taller than wide (a hostile PDF's) is drawn within three widths;
            # pdfium rounds the size up, so a hair less than `width` gives `width` exactly.
            scale = min((width - 1e-6) / page.get_width(), 3 * width / page.get_height())
            image = page.render(scale=scale).to_pil()
            image.save(work / f"page-{number}.png", format="PNG", optimize=True)
        return count, list(wanted)
    finally:
        document.close()


def _child() -> None:
    """Read one request from stdin, answer `{page_count, drawn}` or `{error}` on stdout."""
    request = json.load(sys.stdin)
    memory = request["memory_bytes"]
    if memory is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    work, source = Path(request["work"]), Path(request["source"])
    answer: dict[str, object]
    try:
        pdf = _convert(request["soffice"], source, work) if request["convert"] else source
        count, drawn = _draw(pdf, work, request["pages"], request["width"])
        answer = {"page_count": count, "drawn": drawn}
    except RenderFailed as exc:
        answer = {"error": str(exc)}
    except MemoryError:
        answer = {"error": f"Drawing the document needed more than {memory >> 20} MB of memory."}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    _child()
