"""A private HAProxy in front of instances of the service, as a load balancer runs it.

It sends each request to an instance whose `/ready` answers 200, checked
every quarter second, so an instance that drains (or dies) leaves the
rotation within two checks; a request an instance refuses with 503 (a
draining one), or whose connection fails, is tried once more on another.
Streams are passed through as they come (no buffering) and may last an
hour. Its admin socket tells which instances are in rotation. Debian's
`haproxy` (`scripts/install-cluster-tools`).
"""

from __future__ import annotations

import asyncio
import csv
import io
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.conftest import require_binary
from tests.support.processes import free_port, wait_for_port

HAPROXY = "/usr/sbin/haproxy"
CHECK_MS = 250
"""How often each instance's `/ready` is asked; two failed checks take it out of rotation."""


def haproxy_config(
    port: int, backends: Sequence[tuple[str, int]], admin_socket: Path, check_ms: int = CHECK_MS
) -> str:
    """The configuration: `backends` are (name, port) of instances on 127.0.0.1."""
    servers = "".join(f"  server {name} 127.0.0.1:{each} check\n" for name, each in backends)
    return (
        "global\n"
        "  maxconn 4096\n"
        f"  stats socket {admin_socket} mode 600 level admin\n"
        "  log stdout format raw local0\n"
        "defaults\n"
        "  mode http\n"
        "  log global\n"
        "  option httplog\n"
        "  option forwardfor\n"
        "  option log-health-checks\n"
        "  timeout connect 2s\n"
        "  timeout http-request 10s\n"
        # A stream or a long-polled answer may stay open this long without a byte.
        "  timeout client 1h\n"
        "  timeout server 1h\n"
        # A busy instance may answer its check late: late is not down (a 503 is).
        "  timeout check 2s\n"
        f"frontend service\n  bind 127.0.0.1:{port}\n  default_backend instances\n"
        "backend instances\n"
        "  balance roundrobin\n"
        "  option httpchk GET /ready\n"
        "  http-check expect status 200\n"
        f"  default-server inter {check_ms}ms fall 2 rise 1\n"
        # A new turn refused by a draining instance (503) is sent to another one.
        "  retries 2\n"
        "  option redispatch 1\n"
        "  retry-on conn-failure empty-response 503\n"
        f"{servers}"
    )


class HAProxy:
    """HAProxy on a free loopback port in front of instances listening on 127.0.0.1."""

    def __init__(
        self,
        backends: Sequence[tuple[str, int]],
        *,
        port: int | None = None,
        check_ms: int = CHECK_MS,
    ) -> None:
        program = shutil.which("haproxy") or HAPROXY
        require_binary(program, "haproxy (scripts/install-cluster-tools)")
        self._program = program
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._dir = Path(tempfile.mkdtemp(prefix="dodo-haproxy-"))
        self._admin = self._dir / "admin.sock"
        self.log_path = self._dir / "haproxy.log"
        self._config = self._dir / "haproxy.cfg"
        self._config.write_text(haproxy_config(self.port, backends, self._admin, check_ms))
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [self._program, "-db", "-f", str(self._config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C reaches its owner, which stops it in order
            )
        wait_for_port(self.port)
        deadline = time.monotonic() + 10
        while not self._admin.exists():  # made just after the port is bound
            if time.monotonic() > deadline:
                raise RuntimeError(f"haproxy made no admin socket:\n{self.log()}")
            time.sleep(0.02)

    async def states(self) -> dict[str, str]:
        """Each instance's state as the health checks left it: `UP`, `DOWN`, ...."""
        reader, writer = await asyncio.open_unix_connection(str(self._admin))
        try:
            writer.write(b"show stat\n")
            await writer.drain()
            text = (await reader.read()).decode()
        finally:
            writer.close()
        rows = csv.DictReader(io.StringIO(text.removeprefix("# ")))
        return {
            row["svname"]: row["status"].split()[0]
            for row in rows
            if row["pxname"] == "instances" and row["svname"] not in ("FRONTEND", "BACKEND")
        }

    @property
    def pid(self) -> int:
        assert self._process is not None, "not started"
        return self._process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self._process is not None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)
