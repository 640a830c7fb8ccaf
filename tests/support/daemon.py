"""A server program of the machine's (PgBouncer, HAProxy) that a test or a script runs.

On a free loopback port (or a given one), with its files in a folder of its
own, in a process group of its own (so a Ctrl-C reaches the test or script
that started it, which stops it in order), stopped with its own signal and
killed if it lingers.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from tests.conftest import require_binary
from tests.support.processes import free_port, wait_for_port


class Daemon:
    stop_signal = signal.SIGTERM

    def __init__(self, program: str, installer: str, port: int | None = None) -> None:
        found = shutil.which(program) or f"/usr/sbin/{program}"
        require_binary(found, f"{program} ({installer})")
        self._program = found
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"dodo-{program}-"))
        self.log_path = self.dir / f"{program}.log"
        self._process: subprocess.Popen[bytes] | None = None

    def launch(self, *args: str, logs_to_file: bool = False) -> None:
        """Start the program with `args`; return once its port takes connections. With
        `logs_to_file`, what it prints is its log (else it writes `log_path` itself)."""
        with contextlib.ExitStack() as stack:
            log = stack.enter_context(self.log_path.open("ab")) if logs_to_file else None
            self._process = subprocess.Popen(
                [self._program, *args],
                stdout=log or subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_for_port(self.port)

    @property
    def pid(self) -> int:
        assert self._process is not None, "not started"
        return self._process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self._process is not None:
            self._process.send_signal(self.stop_signal)
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
