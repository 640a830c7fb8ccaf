"""Run the real JavaScript clients in tests/js/ from Node and read what they saw.

Each client's script prints one JSON object a line (tests/js/<client>/run.mjs
says which); a test reads them as they come, so it can act mid-stream (stop
the run when a tool call shows) and then wait for the script to end.
Without Node or the installed client the test skips, and under CI fails
(`tests.conftest.unavailable`): `scripts/install-js-clients` installs them.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import unavailable

JS = Path(__file__).resolve().parents[1] / "js"
NODE_SECONDS = 60.0
"""Longest a client script may take: generous, the machine is shared."""


def js_client(name: str, package: str) -> Path:
    """The script of tests/js/<name>, once Node and its npm `package` are installed."""
    node = shutil.which("node")
    if node is None:
        unavailable("Node.js is not installed: the JavaScript client tests need node and npm")
    if not (JS / name / "node_modules" / package / "package.json").is_file():
        unavailable(
            f"{package} is not installed in tests/js/{name}: run ./scripts/install-js-clients"
        )
    return JS / name / "run.mjs"


class ClientRun:
    """One run of a client script: its JSON lines as they come, then its exit status."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self.lines: list[dict[str, Any]] = []

    async def next_line(self) -> dict[str, Any] | None:
        """The next line the script printed; None once it has exited."""
        assert self._process.stdout is not None
        raw = await asyncio.wait_for(self._process.stdout.readline(), NODE_SECONDS)
        if not raw:
            return None
        line: dict[str, Any] = orjson.loads(raw)
        self.lines.append(line)
        return line

    async def until(self, key: str, predicate: Any = None) -> dict[str, Any]:
        """Read up to the first line with `key` (whose value passes `predicate`, if given)."""
        while (line := await self.next_line()) is not None:
            if key in line and (predicate is None or predicate(line[key])):
                return line
        raise AssertionError(f"the client ended without a {key!r} line: {self.lines}")

    async def finish(self) -> list[dict[str, Any]]:
        """Every line, once the script has exited."""
        while await self.next_line() is not None:
            pass
        await asyncio.wait_for(self._process.wait(), NODE_SECONDS)
        return self.lines

    def of(self, key: str) -> list[Any]:
        return [line[key] for line in self.lines if key in line]


@contextlib.asynccontextmanager
async def run_client(script: Path, url: str, spec: dict[str, Any]) -> AsyncIterator[ClientRun]:
    """Start `node script url spec`; killed on the way out if still running."""
    process = await asyncio.create_subprocess_exec(
        "node",
        str(script),
        url,
        orjson.dumps(spec).decode(),
        cwd=script.parent,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        yield ClientRun(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
