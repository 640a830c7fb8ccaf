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
import socket
import time
from collections.abc import Sequence
from pathlib import Path

from tests.support.daemon import Daemon

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


class HAProxy(Daemon):
    """HAProxy on a free loopback port in front of instances listening on 127.0.0.1."""

    def __init__(
        self,
        backends: Sequence[tuple[str, int]],
        *,
        port: int | None = None,
        check_ms: int = CHECK_MS,
    ) -> None:
        super().__init__("haproxy", "scripts/install-cluster-tools", port)
        self.url = f"http://127.0.0.1:{self.port}"
        self._admin = self.dir / "admin.sock"
        self._config = self.dir / "haproxy.cfg"
        self._config.write_text(haproxy_config(self.port, backends, self._admin, check_ms))

    def start(self) -> None:
        self.launch("-db", "-f", str(self._config), logs_to_file=True)
        deadline = time.monotonic() + 10
        # HAProxy binds the admin socket (the file appears) before it listens on it, so
        # the file's presence alone lets a first `show stat` be refused.
        while not self._admin_answers():
            if time.monotonic() > deadline:
                raise RuntimeError(f"haproxy's admin socket did not answer:\n{self.log()}")
            time.sleep(0.02)

    def _admin_answers(self) -> bool:
        """Whether the admin socket accepts a connection."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(self._admin))
            except (FileNotFoundError, ConnectionRefusedError):
                return False
        return True

    async def states(self) -> dict[str, str]:
        """Each instance's state as the health checks left it: `UP`, `DOWN`, ...."""
        return {name: row["status"].split()[0] for name, row in (await self._stats()).items()}

    async def sessions(self) -> dict[str, int]:
        """How many requests each instance is serving now (a stream counts until it ends)."""
        return {name: int(row["scur"]) for name, row in (await self._stats()).items()}

    async def _stats(self) -> dict[str, dict[str, str]]:
        """Each instance's row of `show stat`, by name."""
        reader, writer = await asyncio.open_unix_connection(str(self._admin))
        try:
            writer.write(b"show stat\n")
            await writer.drain()
            text = (await reader.read()).decode()
        finally:
            writer.close()
        rows = csv.DictReader(io.StringIO(text.removeprefix("# ")))
        return {
            row["svname"]: row
            for row in rows
            if row["pxname"] == "instances" and row["svname"] not in ("FRONTEND", "BACKEND")
        }
