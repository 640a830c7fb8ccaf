"""How this package talks to Redis: one way to connect, one way to report a failure.

The task backend and the shared run logs both need clients that fail fast
(no retries, short timeouts) and errors that name the server without its
password; they share this module so the two cannot drift apart.

Three kinds of Redis (`RedisTarget`), one kind of client for the roles:
a server; the primary the Sentinels name, asked of them again whenever a
connection is opened, so the clients follow a failover once the Sentinels
have promoted a replica; a Cluster, where each command goes to the node
holding its key's slot and the map of slots is read again after a node
fails. Every client queues commands past its connection limit rather than
refuse them, packs commands with hiredis and lets a cancel through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, cast, overload
from urllib.parse import urlsplit

import hiredis
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.client import Pipeline, PubSub
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.asyncio.connection import (
    AbstractConnection,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
    parse_url,
)
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import (
    Sentinel,
    SentinelConnectionPool,
    SentinelManagedConnection,
    SentinelManagedSSLConnection,
)
from redis.backoff import NoBackoff
from redis.driver_info import DriverInfo
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import DataError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import EncodableT

from app.tasks.base import TaskBackendUnavailable
from app.tasks.redis.target import RedisTarget

MAX_CONNECTIONS = 64
"""Connections per client; commands take a millisecond, so a few dozen serve many streams."""
POOL_WAIT_SECONDS = 30.0
"""Longest wait for a free connection: a burst of a thousand claims queues, it is not refused."""

RedisClient = Redis | RedisCluster
"""A client of any kind of Redis the service uses: they answer the same commands."""
RedisPipeline = Pipeline | ClusterPipeline


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


class _PackedSentinelConnection(_HiredisPacking, _CancellableWrites, SentinelManagedConnection):
    pass


class _PackedSentinelSSLConnection(
    _HiredisPacking, _CancellableWrites, SentinelManagedSSLConnection
):
    pass


_PACKED = {
    "redis": _PackedConnection,
    "rediss": _PackedSSLConnection,
    "unix": _PackedUnixConnection,
}
"""The connection class for each of the URL schemes redis-py accepts."""


class _SentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """The Sentinels' pool (it asks them for the primary on each connect), queuing as ours do."""


class _SentinelPrimary(Redis):
    """The primary's client, which also closes the connections to the Sentinels."""

    sentinels: Sentinel | None = None

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        if self.sentinels is not None:
            await self.sentinels.aclose()


class _QueuedCluster(RedisCluster):
    """redis-py's cluster client with our connections, queuing commands past its limit.

    Its nodes refuse a command when all their connections are busy
    (`MaxConnectionsError`) instead of waiting as a `BlockingConnectionPool`
    does: a burst of new turns would be answered 503. Commands wait for one
    of `MAX_CONNECTIONS` places instead; each node allows twice that, for the
    pipelines and the subscription, which take their connections directly.
    """

    def __init__(self, connection_class: type[Connection], **options: Any) -> None:
        super().__init__(max_connections=2 * MAX_CONNECTIONS, **options)
        # The constructor takes no connection class: set it where the nodes are made from.
        self.connection_kwargs["connection_class"] = connection_class
        for node in self.nodes_manager.startup_nodes.values():
            node.connection_class = connection_class
        self._places = asyncio.Semaphore(MAX_CONNECTIONS)

    async def execute_command(self, *args: EncodableT, **kwargs: Any) -> Any:
        try:
            async with asyncio.timeout(POOL_WAIT_SECONDS):
                await self._places.acquire()
        except TimeoutError:
            raise RedisConnectionError("No connection available.") from None
        try:
            return await super().execute_command(*args, **kwargs)
        finally:
            self._places.release()


@cache
def _driver() -> DriverInfo:
    """What each connection tells the server it is (`CLIENT SETINFO`), read once.

    redis-py reads its own version from the installed packages' metadata for
    every connection it opens, a scan of site-packages: a millisecond each,
    paid by every connection a burst of turns opens.
    """
    return DriverInfo()


@overload
def connect(
    target: str, *, timeout: float, read_timeout: float | None, decode: bool = True
) -> Redis: ...


@overload
def connect(
    target: RedisTarget | str, *, timeout: float, read_timeout: float | None, decode: bool = True
) -> RedisClient: ...


def connect(
    target: RedisTarget | str, *, timeout: float, read_timeout: float | None, decode: bool = True
) -> RedisClient:
    """A pooled client whose connects give up after `timeout`, and replies after `read_timeout`.

    `read_timeout` is `timeout` for most clients; longer for one that blocks
    server-side (XREAD BLOCK); None where the caller bounds each round trip
    itself (`SharedPipeline`), which saves a timer per reply.
    """
    target = RedisTarget.of(target)
    # One immediate retry, on a broken connection only, said explicitly: the
    # Redis() constructor of redis-py 6+ defaults to ten with backoff, which
    # would hold every request for seconds while Redis is down. The one retry
    # is for the pooled connections a Redis restart left dead, which the pool
    # does not always notice before use: without it the first command after
    # a restart fails. Timeouts are not retried, so a Redis that stopped
    # answering costs one `timeout`, not two. The cluster client retries the
    # same once, after reading the map of slots again.
    options: dict[str, Any] = {
        "decode_responses": decode,
        "socket_connect_timeout": timeout,
        "socket_timeout": read_timeout,
        "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        "driver_info": _driver(),
    }
    if target.cluster:
        return _cluster(target.url, options)
    if target.sentinels:
        return _sentinel_primary(target, options)
    # redis-py's default pool fails the 101st concurrent command with "Too many
    # connections": a burst of new streams answered 503. This pool queues them.
    pool = BlockingConnectionPool.from_url(
        target.url,
        connection_class=_PACKED.get(urlsplit(target.url).scheme, Connection),
        max_connections=MAX_CONNECTIONS,
        timeout=POOL_WAIT_SECONDS,
        **options,
    )
    return Redis.from_pool(pool)


def _sentinel_primary(target: RedisTarget, options: dict[str, Any]) -> Redis:
    """The primary the Sentinels name, with the URL's password, database and scheme.

    The Sentinels are reached the same way (TLS with `rediss://`), without
    the password: it is the data's, and a Sentinel without one refuses it.
    """
    params = dict(parse_url(target.url))
    for ignored in ("host", "port", "path"):
        params.pop(ignored, None)
    tls = params.pop("connection_class", None) is SSLConnection
    sentinels = Sentinel(  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
        target.sentinel_addresses,
        sentinel_kwargs={
            "socket_connect_timeout": options["socket_connect_timeout"],
            "socket_timeout": options["socket_connect_timeout"],
            "retry": options["retry"],
            "ssl": tls,
        },
    )
    primary: _SentinelPrimary = sentinels.master_for(
        target.sentinel_master,
        redis_class=_SentinelPrimary,
        connection_pool_class=_SentinelPool,
        connection_class=_PackedSentinelSSLConnection if tls else _PackedSentinelConnection,
        max_connections=MAX_CONNECTIONS,
        timeout=POOL_WAIT_SECONDS,
        **params,
        **options,
    )
    primary.sentinels = sentinels
    return primary


def _cluster(url: str, options: dict[str, Any]) -> RedisCluster:
    params = dict(parse_url(url))
    tls = params.pop("connection_class", None) is SSLConnection
    params.pop("db", None)  # a cluster has database 0 only (the settings refuse another)
    connection = _PackedSSLConnection if tls else _PackedConnection
    return _QueuedCluster(connection, ssl=tls, **params, **options)


async def subscription(client: RedisClient) -> PubSub:
    """A pub/sub connection of `client`, opened at the first subscribe.

    In a Cluster it is to the node holding the first channel's slot, on a
    map of slots read anew: a subscription is opened again after its node
    failed, and the map the commands use may still name that node.
    """
    if isinstance(client, RedisCluster):
        await client.initialize()
        await client.nodes_manager.initialize()
    return client.pubsub()


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
