"""A private PgBouncer in transaction mode, in front of a PostgreSQL server a test names.

Transaction mode is how most teams put a pooler in front of many replicas:
a client's server connection is its own only for one transaction, so nothing
a client leaves on a server session (a prepared statement, a `SET`, a lock)
is there for its next transaction. The server connections are opened ahead
(`min_pool_size`) and handed out in turn (`server_round_robin`), not the
most recently used first, so a client that relies on session state meets
another session at once, not only under load. Debian's `pgbouncer`
(`scripts/install-cluster-tools`).
"""

from __future__ import annotations

import os
import shutil
import signal
from urllib.parse import urlsplit, urlunsplit

from tests.support.daemon import Daemon


class PgBouncer(Daemon):
    """PgBouncer on a free loopback port, passing every database through to `server_url`'s server.

    PgBouncer refuses to run as root; as root it switches to the `postgres`
    system user (`-u`), in a folder of its own that user may write.
    """

    stop_signal = signal.SIGINT
    """PgBouncer's own shutdown, which ends every client and server connection."""

    def __init__(self, server_url: str, *, server_connections: int = 8) -> None:
        super().__init__("pgbouncer", "scripts/install-cluster-tools")
        server = urlsplit(server_url)
        self._user = server.username or "postgres"
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, user="postgres")
            self._as_user = ["-u", "postgres"]
        users = self.dir / "userlist.txt"
        users.write_text(f'"{self._user}" ""\n')
        self._config = self.dir / "pgbouncer.ini"
        self._config.write_text(
            "[databases]\n"
            f"* = host={server.hostname or '127.0.0.1'} port={server.port or 5432}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {users}\n"
            "pool_mode = transaction\nserver_round_robin = 1\n"
            f"default_pool_size = {server_connections}\nmin_pool_size = {server_connections}\n"
            "max_client_conn = 2000\n"
            f"admin_users = {self._user}\n"
            f"logfile = {self.log_path}\npidfile = {self.dir / 'pgbouncer.pid'}\n"
        )

    def url(self, database_url: str) -> str:
        """`database_url` (user, database, driver) reached through this PgBouncer."""
        parts = urlsplit(database_url)
        netloc = f"{parts.username or self._user}@127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    def start(self) -> None:
        self.launch(*self._as_user, str(self._config))
