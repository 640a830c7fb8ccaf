"""Servers a test runs as processes of its own, so it may kill and restart them.

`RedisServer` and `PostgresServer` are private servers on free ports (never
the shared ones a test must not stop); `ServiceProcess` is the app itself
under `uvicorn`, one process per instance, as it is deployed. Each is
stopped by the test that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

import app
from tests.conftest import require_binary, unavailable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for_port(port: int, timeout: float = 10.0) -> None:
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
    """A private redis-server on a free port, keeping nothing on disk."""

    def __init__(self, workdir: Path) -> None:
        require_binary("redis-server", "redis-server")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._workdir = workdir
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [
                "redis-server",
                *("--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self._workdir)),
            ],
            stdout=subprocess.DEVNULL,
        )
        _wait_for_port(self.port)

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


class PostgresServer:
    """A private PostgreSQL cluster (initdb + pg_ctl) on a free port, trust auth.

    PostgreSQL refuses to run as root; as root the cluster is made and run
    as the `postgres` system user, in a directory of its own outside the
    test's (root-only) temporary path.
    """

    def __init__(self) -> None:
        self._bin = _postgres_bin()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            require_binary("runuser", "runuser (to run PostgreSQL as the postgres user)")
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self._dir = Path(tempfile.mkdtemp(prefix="dodo-pg-"))
        if self._as_user:
            shutil.chown(self._dir, user="postgres")
        self._data = self._dir / "data"
        self._run("initdb", "-D", str(self._data), "-A", "trust", "-U", "postgres", "--no-sync")

    def url(self, database: str) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self._dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self._dir / "log")
        self._run("pg_ctl", "-D", str(self._data), "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        """Stop at once, dropping every connection, as a crash or a failover would."""
        self._run("pg_ctl", "-D", str(self._data), "-m", "immediate", "-w", "stop")

    def running(self) -> bool:
        status = subprocess.run(
            [*self._as_user, str(self._bin / "pg_ctl"), "-D", str(self._data), "status"],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        return status.returncode == 0

    def create_database(self, name: str) -> None:
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(
            [*self._as_user, str(self._bin / program), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


def _postgres_bin() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        # Resolved: distributions link a few programs onto PATH, not all of them.
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not candidates:
        unavailable("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
    return Path(candidates[-1]).parent


class ServiceProcess:
    """The service under uvicorn in a process of its own, configured by environment only."""

    STARTUP_SECONDS = 60.0

    def __init__(self, name: str, workdir: Path, env: dict[str, str]) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"{name}.log"
        self._workdir = workdir
        # Only what the process needs: nothing of the developer's own settings leaks in.
        base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        # The code under test, not whichever checkout the interpreter has installed: run
        # from its temporary directory, `-m uvicorn` would import the installed `app`.
        base["PYTHONPATH"] = str(Path(app.__file__).resolve().parents[1])
        self._env = {**base, "DATA_DIR": str(workdir / f"{name}-data"), **env}
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Start, and return once `/health` answers (connection refused until then is fine)."""
        command = ("-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port")
        with self.log_path.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                *command,
                str(self.port),
                *("--log-level", "warning"),
                cwd=self._workdir,
                env=self._env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        async with httpx.AsyncClient(base_url=self.url, timeout=2.0) as client:
            deadline = time.monotonic() + self.STARTUP_SECONDS
            while True:
                if self._process.returncode is not None:
                    pytest.fail(f"{self.name} exited at start-up:\n{self.output()}")
                try:
                    if (await client.get("/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"{self.name} is not up after {self.STARTUP_SECONDS}s")
                await asyncio.sleep(0.05)

    async def kill(self) -> None:
        """SIGKILL: the instance dies mid-whatever, as in a crash."""
        if self._process is not None:
            self._process.kill()
            await self._process.wait()
            self._process = None

    async def stop(self) -> None:
        if self._process is None:
            return
        self._process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(15):
                await self._process.wait()
        except TimeoutError:
            await self.kill()
        self._process = None

    def output(self) -> str:
        """The end of the process's log, for a failing test's message."""
        return self.log_path.read_text(errors="replace")[-4000:]
