"""The page cache in Redis, shared by every instance; a Redis that does not answer is a miss."""

from __future__ import annotations

import logging

from app.tasks.base import TaskBackendUnavailable
from app.tasks.redis.client import connect, milliseconds, translate_errors
from app.tasks.redis.target import RedisTarget

log = logging.getLogger(__name__)

REDIS_TIMEOUT_SECONDS = 1.0
"""A cache is worth less than a wait: past this, it is a miss."""


class RedisPageCache:
    def __init__(self, target: RedisTarget | str, prefix: str, seconds: float) -> None:
        target = RedisTarget.of(target)
        self._redis = connect(
            target, timeout=REDIS_TIMEOUT_SECONDS, read_timeout=REDIS_TIMEOUT_SECONDS, decode=False
        )
        self._where = target.where
        self._prefix = f"{prefix}fetch:"
        self._seconds = seconds

    async def get(self, key: str) -> bytes | None:
        try:
            with translate_errors(self._where):
                value = await self._redis.get(self._prefix + key)
                return value if isinstance(value, bytes) else None
        except TaskBackendUnavailable as exc:
            log.warning("page cache: %s; reading the page anew", exc)
            return None

    async def put(self, key: str, value: bytes) -> None:
        try:
            with translate_errors(self._where):
                await self._redis.set(self._prefix + key, value, px=milliseconds(self._seconds))
        except TaskBackendUnavailable as exc:
            log.warning("page cache: %s; the page is not kept", exc)

    async def close(self) -> None:
        await self._redis.aclose()
