"""A private PostgreSQL cluster a test may stop, restart and remove (never the shared server).

Made with `initdb` on a free port in a directory of its own; a machine
without PostgreSQL's server programs skips the test (fails it under CI).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Literal

from tests.conftest import require_binary, unavailable
from tests.support.processes import free_port

StopMode = Literal["fast", "immediate"]
"""`pg_ctl stop -m`: `fast` as a routine restart (clients get `AdminShutdown`), `immediate`
as a crash or a failover (connections just drop)."""


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

    def stop(self, mode: StopMode = "immediate") -> None:
        """Stop, dropping every connection (at once by default, as a crash would)."""
        self._run("pg_ctl", "-D", str(self._data), "-m", mode, "-w", "stop")

    def restart(self, down_seconds: float) -> None:
        """A routine restart (fast shutdown) that keeps the server away for `down_seconds`.

        The pause is the outage itself, the length a test wants clients to ride out.
        """
        self.stop("fast")
        time.sleep(down_seconds)
        self.start()

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
