"""Extraction in a child process with limits, so a hostile file costs the child, not the server.

A parser fed a decompression bomb or a pathological structure can take
gigabytes or minutes before any budget check of ours sees it (lxml builds
the whole tree of a docx; pypdf walks nested objects). In a worker thread
that memory is the server's and that time holds a thread; here it is a
child's, whose address space is capped (`RLIMIT_AS`, so an allocation past
it fails inside the child) and which is killed at the wall-time limit.
Whatever happens to the child, the upload ends `failed` with a reason.

The child is a fresh interpreter (`python -m app.documents.isolated`), not
a fork: forking a process with an event loop and threads copies their locks
mid-use. It gets the request on stdin and answers one JSON object on
stdout; its environment is empty but for the path to this package, so no
secret of the server is within its reach. Starting one costs about 0.2 s
of CPU, small beside reading a document.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import app
from app.documents.extract import (
    PPTX,
    TYPES_BY_EXTENSION,
    Budget,
    Document,
    FileType,
    Section,
    UnreadableFile,
)
from app.documents.ocr import OcrSettings

log = logging.getLogger(__name__)

_APP_ROOT = str(Path(app.__file__).resolve().parent.parent)
_BY_MIME = {t.mime_type: t for t in TYPES_BY_EXTENSION.values()}


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """Given by `LibrarySettings.parsing`; no defaults, like `Budget`."""

    budget: Budget
    memory_bytes: int
    """The child's address space: imports take about 150 MB of it, a parse the rest.
    Tesseract, when it reads a scan, runs under the same cap."""
    seconds: float
    """Wall time for one document, start-up and OCR included."""
    ocr: OcrSettings | None = None
    """How scans and pictures are read; None: they are not (OCR is off)."""


async def extract_isolated(path: Path, file_type: FileType, limits: ParseLimits) -> Document:
    """`extract` in a child process; raises `UnreadableFile`, also when a limit stopped it."""
    answer = await _ask_child("extract", path, file_type, limits)
    return Document(
        answer["unit"], [Section(*s) for s in answer["sections"]], bool(answer.get("ocr"))
    )


async def layouts_isolated(path: Path, limits: ParseLimits) -> dict[str, Any]:
    """`readers.layouts` of a pptx in a child process, under the same limits as its text."""
    answer = await _ask_child("layouts", path, PPTX, limits)
    return dict(answer["layouts"])


async def _ask_child(
    task: str, path: Path, file_type: FileType, limits: ParseLimits
) -> dict[str, Any]:
    request = {
        "task": task,
        "path": str(path),
        "mime_type": file_type.mime_type,
        "budget": asdict(limits.budget),
        "memory_bytes": limits.memory_bytes,
        "ocr": asdict(limits.ocr) if limits.ocr is not None else None,
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.documents.isolated",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"PYTHONPATH": _APP_ROOT},
    )
    try:
        async with asyncio.timeout(limits.seconds):
            output, _ = await child.communicate(json.dumps(request).encode())
    except TimeoutError:
        raise UnreadableFile(
            f"Reading {file_type.label} took longer than {limits.seconds:g} seconds, "
            "the limit: it may be damaged or built to overload the reader."
        ) from None
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    return _answer(output, child.returncode, file_type, limits)


def _answer(
    output: bytes, returncode: int | None, file_type: FileType, limits: ParseLimits
) -> dict[str, Any]:
    try:
        answer = json.loads(output)
    except ValueError:
        # No answer: the child died, most often of an allocation past its limit
        # that a C extension turned into an abort rather than a MemoryError.
        log.warning("the document reader exited with %s and no answer", returncode)
        answer = {"memory": True}
    else:
        # What a document really costs, to set FILE_PARSE_MEMORY_MB by.
        log.debug("the document reader peaked at %d MB", answer["peak_kb"] // 1024)
    if "error" in answer:
        raise UnreadableFile(answer["error"])
    if "memory" in answer:
        megabytes = limits.memory_bytes // (1024 * 1024)
        raise UnreadableFile(
            f"Reading {file_type.label} needed more than {megabytes} MB of memory, "
            "the limit: it may be damaged or built to overload the reader."
        )
    return dict(answer)


def _child() -> None:
    """Read one request from stdin, answer on stdout: the result, an error, or `memory`."""
    request = json.load(sys.stdin)
    memory = request["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    answer: dict[str, object]
    try:
        answer = _work(request)
    except UnreadableFile as exc:
        answer = {"error": str(exc)}
    except MemoryError:
        answer = {"memory": True}
    answer["peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Lone surrogates, which some pdfs yield, become "?" rather than losing the text.
    sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8", "replace"))
    sys.stdout.buffer.flush()
    os._exit(0)


def _work(request: dict[str, Any]) -> dict[str, object]:
    # Here: the parsers load in this child only, never in the server.
    from app.documents.readers import extract, layouts

    path, budget = Path(request["path"]), Budget(**request["budget"])
    if request["task"] == "layouts":
        return {"layouts": layouts(path, budget)}
    ocr = OcrSettings(**request["ocr"]) if request.get("ocr") else None
    document = extract(path, _BY_MIME[request["mime_type"]], budget, ocr)
    return {
        "unit": document.unit,
        "sections": [(s.first, s.last, s.text) for s in document.sections],
        "ocr": document.ocr,
    }


if __name__ == "__main__":
    _child()
