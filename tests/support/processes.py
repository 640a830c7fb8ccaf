"""Servers a test runs as processes of its own, so it may kill and restart them.

`RedisServer` is a private server on a free port (never the shared one a
test must not stop; PostgreSQL's is in `private_postgres`); `ServiceProcess`
is the app itself under `uvicorn`, one process per instance, as it is
deployed. Each is stopped by the test that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.api.head_timeout import UVICORN_FLAGS
from tests.conftest import require_binary
from tests.support.polling import eventually

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SERVE_FLAGS = (
    *UVICORN_FLAGS,
    *("--timeout-graceful-shutdown", "30"),
)
"""uvicorn's flags in `scripts/run` (and the Dockerfile) beside host and port: the product
is tested as it is served, on uvicorn's default loop (uvloop) and nothing else changed."""


def child_env(env: dict[str, str]) -> dict[str, str]:
    """`env` for a process of this checkout's service (or its tools), and only what it needs:
    nothing of the developer's own settings leaks in."""
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    # This checkout's `app`, whatever checkout the installed package points at.
    base["PYTHONPATH"] = str(PROJECT_ROOT)
    return {**base, **env}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, timeout: float = 10.0) -> None:
    """Block until something accepts connections on the port (server start-up is short)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class RedisServer:
    """A private redis-server on a free port, keeping nothing on disk.

    `options` are more of its command-line settings: a replica's `--replicaof`,
    a cluster node's (`redis_topologies`).
    """

    def __init__(self, workdir: Path, *options: str) -> None:
        require_binary("redis-server", "redis-server")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._workdir = workdir
        self._options = options
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._workdir.mkdir(parents=True, exist_ok=True)
        self._process = subprocess.Popen(
            [
                "redis-server",
                *("--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self._workdir)),
                *self._options,
            ],
            stdout=subprocess.DEVNULL,
        )
        wait_for_port(self.port)

    def kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def freeze(self) -> None:
        """Stop the server answering while its connections stay open, as a hung host does."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGCONT)


class ServiceProcess:
    """The service under uvicorn in a process of its own, configured by environment only."""

    STARTUP_SECONDS = 60.0

    def __init__(self, name: str, workdir: Path, env: dict[str, str]) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"{name}.log"
        self._workdir = workdir
        self.env = child_env({"DATA_DIR": str(workdir / f"{name}-data"), **env})
        """What the process starts with: a test may add to it before `start()`."""
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Start, and return once `/health` answers (connection refused until then is fine)."""
        with self.log_path.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                *("-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(self.port)),
                *SERVE_FLAGS,
                *("--log-level", "warning"),
                cwd=self._workdir,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                # A Ctrl-C reaches the test (or scripts/cluster), which stops it in order.
                start_new_session=True,
            )
        process = self._process
        async with httpx.AsyncClient(base_url=self.url, timeout=2.0) as client:

            async def healthy() -> bool:
                if process.returncode is not None:
                    pytest.fail(f"{self.name} exited at start-up:\n{self.output()}")
                try:
                    return (await client.get("/health")).status_code == 200
                except httpx.TransportError:
                    return False

            await eventually(healthy, within=self.STARTUP_SECONDS, what=f"{self.name} up")

    async def kill(self) -> None:
        """SIGKILL: the instance dies mid-whatever, as in a crash."""
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):  # it had exited already
                self._process.kill()
            await self._process.wait()
            self._process = None

    def terminate(self) -> None:
        """SIGTERM, as an orchestrator ends an instance (a deploy, a scale-in): it drains."""
        assert self._process is not None, f"{self.name} is not running"
        self._process.send_signal(signal.SIGTERM)

    async def exited(self, within: float) -> float:
        """Wait for the process to end; the seconds that took. Fails the test past `within`."""
        assert self._process is not None, f"{self.name} is not running"
        began = time.monotonic()
        try:
            async with asyncio.timeout(within):
                await self._process.wait()
        except TimeoutError:
            pytest.fail(f"{self.name} did not exit within {within:g} s:\n{self.output()}")
        self._process = None
        return time.monotonic() - began

    async def stop(self) -> None:
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self._process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(15):
                await self._process.wait()
        except TimeoutError:
            await self.kill()
        self._process = None

    @property
    def pid(self) -> int:
        assert self._process is not None, f"{self.name} is not running"
        return self._process.pid

    def output(self) -> str:
        """The end of the process's log, for a failing test's message."""
        return self.log()[-4000:]

    def log(self) -> str:
        """All the process has written, over each of its starts."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
