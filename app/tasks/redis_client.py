"""How this package talks to Redis: one way to connect, one way to report a failure.

The task manager and the shared run logs both need clients that fail fast
(no retries, short timeouts) and errors that name the server without its
password; they share this module so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from app.tasks.base import TaskBackendUnavailable

MAX_CONNECTIONS = 64
"""Connections per client; commands take a millisecond, so a few dozen serve many streams."""
POOL_WAIT_SECONDS = 30.0
"""Longest wait for a free connection: a burst of a thousand claims queues, it is not refused."""


def connect(
    url: str, *, timeout: float, read_timeout: float | None = None, decode: bool = True
) -> Redis:
    """A pooled client whose connect and commands each give up after `timeout` seconds.

    `read_timeout` replaces `timeout` for replies, for clients that block
    server-side (XREAD BLOCK) longer than a command normally takes.
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
        max_connections=MAX_CONNECTIONS,
        timeout=POOL_WAIT_SECONDS,
        decode_responses=decode,
        socket_connect_timeout=timeout,
        socket_timeout=timeout if read_timeout is None else read_timeout,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
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
