"""A deck's PDF under LibreOffice's limits: its time, and the service's workers.

`soffice` starts `oosplash`, which starts `soffice.bin`: killing `soffice`
alone left the others running. A stand-in `soffice` on PATH starts a child
of its own and waits, as the real one does, so the test knows that child.

Each LibreOffice may take `FILE_PARSE_MEMORY_MB`: a deck's PDF once started
one more beside the `PREVIEW_WORKERS` drawing previews and reports' PDFs,
however many decks were being built.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest

from app.agents.pptx.preview import ConversionFailed, to_pdf
from app.documents.office import RenderLimits
from app.documents.previews import FilePreviews, PreviewFailed
from app.store.blobs import LocalBlobStore
from tests.support.polling import eventually

HANGING_SOFFICE = """#!/bin/sh
sleep 300 &
echo $! > "{pid_file}"
wait
"""
"""The child's environment holds no variable of ours, so where to tell the pid is written in."""
GATED_SOFFICE = """#!/bin/sh
echo started >> "{log}"
read line < "{gate}"
exit 1
"""
"""Says it started, then waits for a line on the gate (a FIFO) and fails the conversion."""


def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    programs = tmp_path / "bin"
    programs.mkdir()
    (programs / "soffice").write_text(script)
    (programs / "soffice").chmod(0o755)
    monkeypatch.setenv("PATH", f"{programs}:{os.environ['PATH']}")


def previews(tmp_path: Path, workers: int) -> FilePreviews:
    return FilePreviews(LocalBlobStore(tmp_path / "blobs"), RenderLimits(None, 60), workers)


async def ended(pid: int) -> None:
    """Return once process `pid` (not our child) has ended."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, done.set)
    try:
        await done.wait()
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def test_a_conversion_past_its_time_ends_every_process_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    child_pid_file = tmp_path / "child.pid"
    stand_in(tmp_path, monkeypatch, HANGING_SOFFICE.format(pid_file=child_pid_file))

    with pytest.raises(ConversionFailed, match="longer than 1 seconds"):
        await to_pdf(previews(tmp_path, 2), b"not really a deck", limit_seconds=1.0)
    child = int(child_pid_file.read_text())
    try:
        async with asyncio.timeout(5):
            await ended(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


async def test_a_decks_pdf_waits_for_a_free_preview_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, gate = tmp_path / "started.log", tmp_path / "gate"
    os.mkfifo(gate)
    stand_in(tmp_path, monkeypatch, GATED_SOFFICE.format(log=log, gate=gate))
    one_worker = previews(tmp_path, 1)

    def started() -> int:
        return len(log.read_text().splitlines()) if log.exists() else 0

    async def started_at_least(count: int) -> bool:
        return started() >= count

    # Read and written here, the gate is never without a writer nor a reader: a line
    # written waits in it for the next LibreOffice to read.
    opened = os.open(gate, os.O_RDWR)
    try:
        report = asyncio.create_task(one_worker.pdf_of(b"a report", ".docx"))
        await eventually(lambda: started_at_least(1), what="the report's LibreOffice")
        deck = asyncio.create_task(to_pdf(one_worker, b"a deck", limit_seconds=60))
        # A negative: given a second, no second LibreOffice starts while the worker is busy.
        _, waiting = await asyncio.wait([deck], timeout=1.0)
        assert waiting == {deck}
        assert started() == 1

        os.write(opened, b"go\n")
        with pytest.raises(PreviewFailed):
            await report
        await eventually(lambda: started_at_least(2), what="the deck's LibreOffice")
        os.write(opened, b"go\n")
        with pytest.raises(ConversionFailed):
            await deck
    finally:
        os.close(opened)
