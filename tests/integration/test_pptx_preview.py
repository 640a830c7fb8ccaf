"""LibreOffice past its time limit: the preview gives up, and nothing it started lives on.

`soffice` starts `oosplash`, which starts `soffice.bin`: killing `soffice`
alone left the others running. A stand-in `soffice` on PATH starts a child
of its own and waits, as the real one does, so the test knows that child.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest

from app.agents.pptx.preview import thumbnails

HANGING_SOFFICE = """#!/bin/sh
sleep 300 &
echo $! > "{pid_file}"
wait
"""
"""The child's environment holds no variable of ours, so where to tell the pid is written in."""


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
    programs = tmp_path / "bin"
    programs.mkdir()
    child_pid_file = tmp_path / "child.pid"
    (programs / "soffice").write_text(HANGING_SOFFICE.format(pid_file=child_pid_file))
    (programs / "soffice").chmod(0o755)
    monkeypatch.setenv("PATH", f"{programs}:{os.environ['PATH']}")

    images = await thumbnails(b"not really a deck", limit_seconds=1.0)
    child = int(child_pid_file.read_text())
    try:
        async with asyncio.timeout(5):
            await ended(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)

    assert images == []
