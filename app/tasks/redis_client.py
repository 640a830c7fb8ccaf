"""How this package talks to Redis: one way to connect, one way to report a failure.

The task backend and the shared run logs both need clients that fail fast
(no retries, short timeouts) and errors that name the server without its
password; they share this module so the two cannot drift apart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import cast
from urllib.parse import urlsplit, urlunsplit

import hiredis
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.connection import (
    AbstractConnection,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.driver_info import DriverInfo
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import DataError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import EncodableT

from app.tasks.base import TaskBackendUnavailable

MAX_CONNECTIONS = 64
"""Connections per client; commands take a millisecond, so a few dozen serve many streams."""
POOL_WAIT_SECONDS = 30.0
"""Longest wait for a free connection: a burst of a thousand claims queues, it is not refused."""


class _HiredisPacking:
    """Commands packed into Redis's protocol by hiredis, in C.

    redis-py's asyncio connection packs each argument in Python, 10 to 20 µs
    a command: a quarter of what a batch of turns' commands costs the client
    (bench/README.md, "The floor cut"). hiredis, which redis-py already uses
    to read replies, writes the same bytes; redis-py's synchronous client
    packs with it too.
    """

    def pack_command(self, *args: EncodableT) -> list[bytes]:
        # A command name of several words ("CLIENT SETINFO") goes as several
        # arguments, as redis-py's own packer sends it.
        if isinstance(args[0], str):
            args = (*args[0].encode().split(), *args[1:])
        elif isinstance(args[0], bytes) and b" " in args[0]:
            args = (*args[0].split(), *args[1:])
        try:
            # A bytearray is refused here too (redis-py's packer takes one); nothing sends one.
            return [hiredis.pack_command(cast(tuple[str | int | float | bytes], args))]
        except TypeError as exc:  # a value Redis has no type for (None, a bool)
            raise DataError(str(exc)) from exc


class _CancellableWrites(AbstractConnection):
    """A command's write bounded by `asyncio.timeout`, which hands a cancel on.

    redis-py bounds it with `asyncio.wait_for`, which on Python 3.11 returns
    normally when its caller is cancelled just as the write ends (CPython
    gh-86296, fixed in 3.12): the cancel is lost and a task told to stop runs
    on. A shutdown waited forever that way on the dead-instance sweeper, whose
    loop went on sweeping; a stop landing on a run's Redis command would have
    let the run go on.
    """

    async def send_packed_command(
        self, command: bytes | str | Iterable[bytes], check_health: bool = True
    ) -> None:
        bound = self.socket_timeout
        if not bound:
            await super().send_packed_command(command, check_health)
            return
        self.socket_timeout = None  # redis-py writes without `wait_for` then
        try:
            async with asyncio.timeout(bound):
                await super().send_packed_command(command, check_health)
        except TimeoutError:
            raise RedisTimeoutError("Timeout writing to socket") from None
        finally:
            self.socket_timeout = bound


class _PackedConnection(_HiredisPacking, _CancellableWrites, Connection):
    pass


class _PackedSSLConnection(_HiredisPacking, _CancellableWrites, SSLConnection):
    pass


class _PackedUnixConnection(_HiredisPacking, _CancellableWrites, UnixDomainSocketConnection):
    pass


_PACKED = {
    "redis": _PackedConnection,
    "rediss": _PackedSSLConnection,
    "unix": _PackedUnixConnection,
}
"""The connection class for each of the URL schemes redis-py accepts."""


@cache
def _driver() -> DriverInfo:
    """What each connection tells the server it is (`CLIENT SETINFO`), read once.

    redis-py reads its own version from the installed packages' metadata for
    every connection it opens, a scan of site-packages: a millisecond each,
    paid by every connection a burst of turns opens.
    """
    return DriverInfo()


def connect(url: str, *, timeout: float, read_timeout: float | None, decode: bool = True) -> Redis:
    """A pooled client whose connects give up after `timeout`, and replies after `read_timeout`.

    `read_timeout` is `timeout` for most clients; longer for one that blocks
    server-side (XREAD BLOCK); None where the caller bounds each round trip
    itself (`SharedPipeline`), which saves a timer per reply.
    """
    # One immediate retry, on a broken connection only, said explicitly: the
    # Redis() constructor of redis-py 6+ defaults to ten with backoff, which
    # would hold every request for seconds while Redis is down. The one retry
    # is for the pooled connections a Redis restart left dead, which the pool
    # does not always notice before use: without it the first command after
    # a restart fails. Timeouts are not retried, so a Redis that stopped
    # answering costs one `timeout`, not two.
    # redis-py's default pool fails the 101st concurrent command with "Too many
    # connections": a burst of new streams answered 503. This pool queues them.
    pool = BlockingConnectionPool.from_url(
        url,
        connection_class=_PACKED.get(urlsplit(url).scheme, Connection),
        max_connections=MAX_CONNECTIONS,
        timeout=POOL_WAIT_SECONDS,
        decode_responses=decode,
        socket_connect_timeout=timeout,
        socket_timeout=read_timeout,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        driver_info=_driver(),
    )
    return Redis.from_pool(pool)


def redacted(url: str) -> str:
    """The URL without credentials (user info, or a `password=` query) for messages and logs."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query=""))


@contextmanager
def translate_errors(where: str) -> Iterator[None]:
    """Callers handle one error; its text names the server (`where`, redacted) and the cause."""
    try:
        yield
    except (RedisError, OSError) as exc:
        raise TaskBackendUnavailable(f"Redis at {where} failed: {type(exc).__name__}") from exc


def milliseconds(seconds: float) -> int:
    """A duration as Redis's PX/PEXPIRE/BLOCK want it: whole milliseconds, at least one."""
    return max(1, round(seconds * 1000))
