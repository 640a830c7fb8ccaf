"""Redis as deployments that outlive a failed server run it: a primary with a replica
watched by three Sentinels, and a Cluster of three primaries.

Private servers on free loopback ports (never the shared Redis), started and
stopped by the test or fixture that owns them, with short timings: a Sentinel
judges a silent primary down after a second, a cluster node after one, so a
failover takes seconds, not minutes. `environment` is what an instance is
configured with (as `ServiceProcess` takes it); `target` the same for the
Redis roles built directly.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
import redis
import redis.asyncio

from app.tasks.redis.target import RedisTarget
from tests.conftest import require_binary
from tests.support.polling import POLL_SECONDS, eventually
from tests.support.processes import RedisServer, free_port, wait_for_port

SENTINEL_MASTER = "dodo-primary"
"""The name the Sentinels monitor the primary under (REDIS_SENTINEL_MASTER)."""
DOWN_AFTER_MS = 1000
"""How long the primary is silent before a Sentinel judges it down (30 s by default)."""
FAILOVER_TIMEOUT_MS = 3000
"""How long a failover may take before the Sentinels try another (3 min by default)."""
NODE_TIMEOUT_MS = 1000
"""How long a cluster node is silent before the others judge it failed (15 s by default)."""
PROMPT_SYNC = ("--repl-diskless-sync-delay", "0")
"""A replica's first copy sent at once: a primary waits 5 s by default, for more replicas."""
STARTUP_SECONDS = 20.0
UNUSED_HOST = "primary.invalid"
"""REDIS_URL's host with Sentinels: a name that resolves nowhere, so a client that
used it instead of asking the Sentinels would fail."""


def _settle(check: Callable[[], bool], what: str) -> None:
    """Wait, in a fixture's set-up, for servers that were just started to agree."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not come within {STARTUP_SECONDS:g} s")
        time.sleep(POLL_SECONDS)


class SentinelSet:
    """A primary, its replicas, and three Sentinels (quorum two) that fail it over."""

    def __init__(self, workdir: Path, replicas: int = 1) -> None:
        require_binary("redis-sentinel", "redis-sentinel (scripts/install-redis-sentinel)")
        self._workdir = workdir
        self.servers = [RedisServer(workdir / "server-0", *PROMPT_SYNC)]
        primary = str(self.servers[0].port)
        self.servers += [
            RedisServer(workdir / f"server-{n}", *PROMPT_SYNC, "--replicaof", "127.0.0.1", primary)
            for n in range(1, replicas + 1)
        ]
        self.sentinel_ports = [free_port() for _ in range(3)]
        self._sentinels: list[subprocess.Popen[bytes]] = []

    @property
    def sentinels(self) -> str:
        """REDIS_SENTINELS."""
        return ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)

    @property
    def environment(self) -> dict[str, str]:
        return {
            "REDIS_URL": f"redis://{UNUSED_HOST}/0",
            "REDIS_SENTINELS": self.sentinels,
            "REDIS_SENTINEL_MASTER": SENTINEL_MASTER,
        }

    @property
    def target(self) -> RedisTarget:
        env = self.environment
        return RedisTarget(
            url=env["REDIS_URL"],
            sentinels=self.sentinels,
            sentinel_master=SENTINEL_MASTER,
            cluster=False,
        )

    def start(self) -> None:
        """Return once every replica is in sync and each Sentinel knows all the others."""
        for server in self.servers:
            server.start()
        _settle(self._replicating, "the replicas in sync with the primary")
        for port in self.sentinel_ports:
            config = self._workdir / f"sentinel-{port}.conf"
            config.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {self._workdir}\n"
                f"sentinel monitor {SENTINEL_MASTER} 127.0.0.1 {self.servers[0].port} 2\n"
                f"sentinel down-after-milliseconds {SENTINEL_MASTER} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SENTINEL_MASTER} {FAILOVER_TIMEOUT_MS}\n"
            )
            self._sentinels.append(
                subprocess.Popen(["redis-sentinel", str(config)], stdout=subprocess.DEVNULL)
            )
            wait_for_port(port)
        _settle(self._watching, "the Sentinels watching the primary, its replicas and each other")

    def primary_port(self) -> int:
        """The primary's port, as the first Sentinel that answers names it."""
        for port in self.sentinel_ports:
            try:
                with redis.Redis(port=port, socket_timeout=1.0) as sentinel:
                    _, primary = sentinel.sentinel_get_master_addr_by_name(SENTINEL_MASTER)
                    return int(primary)
            except redis.ConnectionError:
                continue
        raise AssertionError("no Sentinel answers")

    def kill_primary(self) -> int:
        """SIGKILL the primary (its connections just drop, as in a crash); its port."""
        port = self.primary_port()
        next(server for server in self.servers if server.port == port).kill()
        return port

    async def promoted(self, old_port: int, within: float = 30.0) -> float:
        """Wait until every Sentinel names another primary and it takes writes; the seconds."""

        async def taken_over() -> bool:
            named = set()
            for port in self.sentinel_ports:
                async with redis.asyncio.Redis(port=port, socket_timeout=1.0) as sentinel:
                    address = await sentinel.sentinel_get_master_addr_by_name(SENTINEL_MASTER)
                    named.add(int(cast(tuple[str, int], address)[1]))
            if len(named) != 1 or old_port in named:
                return False
            (new,) = named
            async with redis.asyncio.Redis(port=new, socket_timeout=1.0) as server:
                role = cast(list[bytes], await server.role())
            return role[0] == b"master"

        return await eventually(taken_over, within=within, what="the Sentinels' new primary")

    def stop(self) -> None:
        for sentinel in self._sentinels:
            sentinel.send_signal(signal.SIGKILL)
            sentinel.wait()
        self._sentinels.clear()
        for server in self.servers:
            server.kill()

    def _replicating(self) -> bool:
        with redis.Redis(port=self.servers[0].port, decode_responses=True) as primary:
            info = primary.info("replication")
        in_sync = [
            value
            for key, value in info.items()
            if key.startswith("slave") and isinstance(value, dict) and value["state"] == "online"
        ]
        return len(in_sync) == len(self.servers) - 1

    def _watching(self) -> bool:
        for port in self.sentinel_ports:
            with redis.Redis(port=port, decode_responses=True) as sentinel:
                state = sentinel.sentinel_master(SENTINEL_MASTER)
            if state["num-other-sentinels"] != len(self.sentinel_ports) - 1:
                return False
            if state["num-slaves"] != len(self.servers) - 1:
                return False
        return True


class ClusterNodes:
    """A Redis Cluster of `primaries` primaries (with `replicas` each), all slots covered."""

    def __init__(self, workdir: Path, primaries: int = 3, replicas: int = 0) -> None:
        require_binary("redis-cli", "redis-cli (it creates the cluster)")
        self._replicas = replicas
        self.nodes = [
            RedisServer(
                workdir / f"node-{n}",
                *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
                *("--cluster-node-timeout", str(NODE_TIMEOUT_MS)),
                *("--cluster-port", str(free_port())),
            )
            for n in range(primaries * (1 + replicas))
        ]

    @property
    def url(self) -> str:
        """A node to start from: the client finds the others."""
        return self.nodes[0].url

    @property
    def environment(self) -> dict[str, str]:
        return {"REDIS_URL": self.url, "REDIS_CLUSTER": "true"}

    @property
    def target(self) -> RedisTarget:
        return RedisTarget(url=self.url, sentinels="", sentinel_master="", cluster=True)

    def start(self) -> None:
        """Return once every node knows the others and serves a cluster with all slots."""
        for node in self.nodes:
            node.start()
        subprocess.run(
            [
                *("redis-cli", "--cluster", "create"),
                *(f"127.0.0.1:{node.port}" for node in self.nodes),
                *("--cluster-replicas", str(self._replicas), "--cluster-yes"),
            ],
            check=True,
            capture_output=True,
        )
        _settle(self._formed, "every node seeing the whole cluster")

    def keys_by_node(self, pattern: str) -> dict[int, list[str]]:
        """The keys matching `pattern` that each primary holds, by its port (SCAN on each)."""
        found: dict[int, list[str]] = {}
        for node in self.nodes:
            with redis.Redis(port=node.port, decode_responses=True) as server:
                if server.execute_command("ROLE")[0] == "master":
                    found[node.port] = sorted(server.scan_iter(match=pattern))
        return found

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()

    def _formed(self) -> bool:
        for node in self.nodes:
            with redis.Redis(port=node.port, decode_responses=True) as server:
                info = server.cluster("INFO")
            if info["cluster_state"] != "ok" or int(info["cluster_known_nodes"]) != len(self.nodes):
                return False
        return True
