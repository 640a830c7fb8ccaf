"""How this package talks to Redis: one way to connect, one way to report a failure.

The task manager and the shared run logs both need clients that fail fast
(no retries, short timeouts) and errors that name the server without its
password; they share this module so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from app.tasks.base import TaskBackendUnavailable


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
    return Redis.from_url(
        url,
        decode_responses=decode,
        socket_connect_timeout=timeout,
        socket_timeout=timeout if read_timeout is None else read_timeout,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    )


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
