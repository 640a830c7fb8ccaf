"""Commands packed by hiredis reach Redis byte for byte as redis-py's own packer writes them."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis
from redis.asyncio.connection import (
    AbstractConnection,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)
from redis.exceptions import DataError
from redis.typing import EncodableT

from app.tasks.redis.client import connect

COMMANDS: list[tuple[EncodableT, ...]] = [
    ("SET", "conversation:1", "a question, with «accents» and 中文"),
    ("XADD", b"log:1", b"MAXLEN", b"~", 10_000, b"*", b"e", b'{"type":"text"}'),
    ("PEXPIRE", "claim", 12_345_678_901_234_567_890),
    ("ZADD", "slots", 1.5e20, "run", 0.1, "other"),
    ("CLIENT SETINFO", "LIB-NAME", "redis-py"),
    (b"CONFIG GET", b"maxmemory"),
    ("SET", "empty", b""),
]


def connection_of(client: Redis) -> AbstractConnection:
    """A connection the client's pool would open (not connected)."""
    pool = client.connection_pool
    return pool.connection_class(**pool.connection_kwargs)


def packed_by(client: Redis, command: tuple[EncodableT, ...]) -> bytes:
    return b"".join(connection_of(client).pack_command(*command))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: str(command[0]))
def test_a_command_is_packed_as_redis_py_packs_it(command: tuple[EncodableT, ...]) -> None:
    ours = connect("redis://127.0.0.1:1/0", timeout=1.0, read_timeout=1.0)
    theirs = b"".join(Connection().pack_command(*command))

    assert packed_by(ours, command) == theirs


def test_a_value_redis_has_no_type_for_is_refused_before_it_is_sent() -> None:
    client = connect("redis://127.0.0.1:1/0", timeout=1.0, read_timeout=1.0)

    with pytest.raises(DataError):
        packed_by(client, ("SET", "key", None))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "transport"),
    [
        ("redis://127.0.0.1:1/0", Connection),
        ("rediss://127.0.0.1:1/0", SSLConnection),
        ("unix:///run/redis.sock", UnixDomainSocketConnection),
    ],
)
def test_each_url_scheme_keeps_its_transport(url: str, transport: type[Connection]) -> None:
    connection = connection_of(connect(url, timeout=1.0, read_timeout=1.0))

    assert isinstance(connection, transport)
    assert not isinstance(connection, SSLConnection) or transport is SSLConnection
