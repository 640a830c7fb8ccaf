"""Which Redis the settings describe, and the key names each kind of Redis gets.

A Redis Cluster runs a script or a transaction only over keys of one slot:
the keys the task scripts touch together must share their user's slot, and
different users must be free to land on different nodes.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import AbstractConnection, SSLConnection
from redis.crc import key_slot

from app.config import Settings
from app.tasks.redis.client import RedisClient, connect
from app.tasks.redis.shared import TaskKeys
from app.tasks.redis.target import RedisTarget

SENTINELS = {"redis_sentinels": "10.0.0.1:26379, [::1]:26380", "redis_sentinel_master": "main"}


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


def test_the_sentinels_are_read_as_addresses_and_the_url_keeps_its_password() -> None:
    target = RedisTarget.from_settings(settings(redis_url="rediss://:secret@unused/3", **SENTINELS))

    assert target.sentinel_addresses == [("10.0.0.1", 26379), ("::1", 26380)]
    assert "secret" not in target.where
    assert "main" in target.where


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (SENTINELS, "need REDIS_URL"),
        ({"redis_cluster": True}, "need REDIS_URL"),
        ({"redis_url": "redis://h/0", "redis_sentinels": "h:26379"}, "REDIS_SENTINEL_MASTER"),
        (
            {"redis_url": "redis://h/0", "redis_sentinels": "h", "redis_sentinel_master": "m"},
            "host:port",
        ),
        ({"redis_url": "redis://h/0", "redis_cluster": True, **SENTINELS}, "exclude each other"),
        ({"redis_url": "redis://h/2", "redis_cluster": True}, "database 0"),
        ({"redis_url": "redis://h/0", "redis_cluster": True, "redis_prefix": "{dodo}:"}, "{ or }"),
    ],
)
def test_a_redis_the_settings_cannot_describe_is_refused_at_start(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message.replace("{", r"\{").replace("}", r"\}")):
        settings(**values)


def test_a_server_keeps_the_key_names_a_rolling_update_still_reads() -> None:
    keys = TaskKeys("dodo:", "instance-a", tagged=RedisTarget.of("redis://h/0").keys_tagged)

    assert keys.claim("alice", "c1") == "dodo:task:alice:c1"
    assert keys.queue("alice", "c1") == "dodo:queue:alice:c1"
    assert keys.ticket("alice", "t1") == "dodo:queued:t1"
    assert keys.board("alice") == "dodo:board:alice"
    assert keys.board_user(keys.board("alice")) == "alice"


@pytest.mark.parametrize("user", ["alice", "bob", "a}b", "{x}", "用户"])
def test_in_a_cluster_a_users_keys_share_one_slot(user: str) -> None:
    keys = TaskKeys("dodo:", "instance-a", tagged=True)
    together = [
        keys.claim(user, "c1"),
        keys.claim(user, "c2"),
        keys.queue(user, "c1"),
        keys.ticket(user, "t1"),
        keys.board(user),
    ]

    assert len({key_slot(key.encode()) for key in together}) == 1
    assert keys.board_user(keys.board(user)) == user


def test_in_a_cluster_users_spread_over_the_slots() -> None:
    keys = TaskKeys("dodo:", "instance-a", tagged=True)
    slots = {key_slot(keys.claim(f"user-{n}", "c1").encode()) for n in range(100)}

    assert len(slots) > 90


def node_connection(client: RedisClient) -> AbstractConnection:
    """A connection the client would open (not connected): to a node, or to the primary."""
    if isinstance(client, RedisCluster):
        node = next(iter(client.nodes_manager.startup_nodes.values()))
        return node.connection_class(**node.connection_kwargs)
    pool = client.connection_pool
    return pool.connection_class(**pool.connection_kwargs)


@pytest.mark.parametrize("scheme", ["redis", "rediss"])
@pytest.mark.parametrize("kind", ["sentinels", "cluster"])
async def test_sentinel_and_cluster_clients_open_our_connections(kind: str, scheme: str) -> None:
    """Packed by hiredis, their writes reached by a cancel, over TLS for `rediss://`."""
    target = RedisTarget(
        url=f"{scheme}://:secret@127.0.0.1:1/0",
        sentinels="127.0.0.1:2" if kind == "sentinels" else "",
        sentinel_master="main" if kind == "sentinels" else "",
        cluster=kind == "cluster",
    )
    client = connect(target, timeout=1.0, read_timeout=1.0)
    connection = node_connection(client)
    await client.aclose()

    ours = [c for c in type(connection).__mro__ if c.__module__ == "app.tasks.redis.client"]
    assert ours
    assert isinstance(connection, SSLConnection) == (scheme == "rediss")
    assert connection.password == "secret"
