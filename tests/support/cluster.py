"""The service as a team runs it past one machine: instances behind HAProxy, on shared engines.

Each instance is a uvicorn process (`ServiceProcess`, as `scripts/run`
serves it) on a port of its own; HAProxy (`tests/support/haproxy.py`) is the
one address clients use, and takes an instance out of rotation when its
`/ready` fails (a drain, a death). They share one `DATA_DIR`, as instances
on a ReadWriteMany volume do, and whatever database and Redis the
environment names (PostgreSQL through PgBouncer, `tests/support/pgbouncer.py`,
for the tests of a transaction pooler). Tests reach every part: kill or stop
(SIGTERM) one instance, read each one's log, ask HAProxy which are in
rotation.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.haproxy import HAProxy
from tests.support.polling import eventually
from tests.support.processes import PROJECT_ROOT, ServiceProcess, child_env

INSTANCE_NAMES = "abcdefghij"


def migrate(env: dict[str, str]) -> None:
    """The deploy step before instances start: `alembic upgrade head`, with the instances'
    environment (so on `MIGRATE_DATABASE_URL`, the direct connection, when it names one)."""
    done = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=PROJECT_ROOT,
        env=child_env(env),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"alembic upgrade head failed:\n{done.stderr[-4000:]}")


class Cluster:
    """`count` instances behind HAProxy, all with `env`; clients talk to `url` (on `port`,
    else a free one)."""

    def __init__(self, workdir: Path, env: dict[str, str], *, port: int | None = None) -> None:
        self._workdir = workdir
        self._port = port
        self.env = {"DATA_DIR": str(workdir / "shared-data"), **env}
        """What every instance starts with: a test may add to it before `start()`."""
        self.instances: list[ServiceProcess] = []
        self.haproxy: HAProxy | None = None
        self._clients: list[httpx.AsyncClient] = []

    @property
    def url(self) -> str:
        assert self.haproxy is not None, "the cluster is not started"
        return self.haproxy.url

    async def start(self, count: int = 3, **env: str) -> httpx.AsyncClient:
        """Migrate, start the instances together and HAProxy in front of them; a client on
        HAProxy, returned once every instance is in rotation."""
        self.env.update(env)
        await asyncio.to_thread(migrate, self.env)
        self.instances = [
            ServiceProcess(name, self._workdir, self.env) for name in INSTANCE_NAMES[:count]
        ]
        await asyncio.gather(*(each.start() for each in self.instances))
        self.haproxy = HAProxy([(each.name, each.port) for each in self.instances], port=self._port)
        self.haproxy.start()
        names = {each.name for each in self.instances}
        await eventually(
            lambda: self.in_rotation(names), within=10, what="every instance in rotation"
        )
        return self.client()

    def client(self, timeout: float = 30.0) -> httpx.AsyncClient:
        """A client on HAProxy, closed with the cluster."""
        client = httpx.AsyncClient(base_url=self.url, timeout=timeout)
        self._clients.append(client)
        return client

    def direct(self, name: str, timeout: float = 10.0) -> httpx.AsyncClient:
        """A client on one instance, past HAProxy (what a request routed there meets), closed
        with the cluster."""
        client = httpx.AsyncClient(base_url=self.instance(name).url, timeout=timeout)
        self._clients.append(client)
        return client

    def instance(self, name: str) -> ServiceProcess:
        return next(each for each in self.instances if each.name == name)

    async def in_rotation(self, names: set[str]) -> bool:
        """Whether HAProxy sends requests to exactly these instances."""
        assert self.haproxy is not None
        states = await self.haproxy.states()
        return {name for name, state in states.items() if state == "UP"} == names

    async def serving(self) -> str:
        """The instance serving the one request in flight (a lone client's stream), once
        only one is."""
        assert self.haproxy is not None
        haproxy = self.haproxy
        found: list[str] = []

        async def one() -> bool:
            found[:] = [name for name, count in (await haproxy.sessions()).items() if count]
            return len(found) == 1

        await eventually(one, within=10, what="one instance serving a request")
        return found[0]

    def logs(self) -> dict[str, str]:
        """Every instance's log, and HAProxy's, by name."""
        found = {each.name: each.log() for each in self.instances}
        if self.haproxy is not None:
            found["haproxy"] = self.haproxy.log()
        return found

    async def close(self) -> None:
        for client in self._clients:
            await client.aclose()
        if self.haproxy is not None:
            self.haproxy.remove()
        await asyncio.gather(*(each.stop() for each in self.instances))
