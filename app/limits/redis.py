"""Per-user limits in Redis, so they hold across every instance sharing it.

Each check is one Lua script, so reading and updating a user's count is
atomic however many instances ask at once, and each uses the server's clock
(`TIME`), so instances with drifting clocks agree.

A user's stream slots are a sorted set of run ids scored by when each
lapses (`SLOT_SECONDS` after it was taken): a slot whose instance died
without releasing it lapses by itself instead of locking the user out. A
slot whose release failed while Redis was away is released again every
`RETRY_SECONDS` until Redis answers: a primary promoted in a failover
still holds it, and would count it for hours.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial

from redis.exceptions import RedisError

from app.limits.base import UNHELD, Action, Rates, StreamSlot, too_fast, too_many_streams
from app.tasks.base import TaskBackendUnavailable
from app.tasks.redis.batch import SharedPipeline
from app.tasks.redis.client import RedisPipeline, translate_errors
from app.tasks.redis.target import RedisTarget

SLOT_SECONDS = 6 * 3600
"""Longest a slot is held without release: far past any turn, short of a lockout."""
RETRY_SECONDS = 1.0
"""Pause between attempts to release the slots whose release failed."""

_TAKE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local function take(key, per_minute)
  if per_minute <= 0 then
    return 0
  end
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = tonumber(state[1]) or per_minute
  local at = tonumber(state[2]) or now
  tokens = math.min(per_minute, tokens + math.max(0, now - at) * per_minute / 60)
  local wait = 0
  if tokens >= 1 then
    tokens = tokens - 1
  else
    wait = (1 - tokens) * 60 / per_minute
  end
  redis.call('HSET', key, 'tokens', tostring(tokens), 'at', tostring(now))
  redis.call('EXPIRE', key, 120)
  return wait
end
"""
"""A token bucket at the server's clock; `take` answers the seconds to wait, 0 when taken."""

_TAKE_LUA = _TAKE + "return tostring(take(KEYS[1], tonumber(ARGV[1])))"

_OPEN_STREAM_LUA = (
    _TAKE
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 'full'
end
local wait = take(KEYS[2], tonumber(ARGV[4]))
if wait > 0 then
  return tostring(wait)
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return '0'
"""
)
"""A slot and a new-stream token in one round trip: both are taken, or neither."""


@dataclass(slots=True)
class _Slot:
    limits: RedisUserLimits
    key: str
    run_id: str

    async def release(self) -> None:
        await self.limits.release(self.key, self.run_id)


class RedisUserLimits:
    def __init__(
        self, target: RedisTarget | str, prefix: str, rates: Rates, *, timeout: float = 2.0
    ) -> None:
        target = RedisTarget.of(target)
        self._where = target.where
        self._prefix = f"{prefix}limits:"
        self._tagged = target.keys_tagged
        self._rates = rates
        self._batch = SharedPipeline(target, timeout=timeout)
        self._unreleased: set[tuple[str, str]] = set()
        """Slots (key, run id) whose release failed, until they are released."""
        self._releasing: asyncio.Task[None] | None = None

    async def open_stream(self, user: str, run_id: str, rates: Rates | None = None) -> StreamSlot:
        rates = rates or self._rates
        if not rates.max_streams:
            await self.take(user, "stream", rates)
            return UNHELD
        key, bucket = self._key("streams", user), self._key("stream", user)
        per_minute = rates.bucket("stream")
        args = (rates.max_streams, run_id, SLOT_SECONDS, per_minute)
        with translate_errors(self._where):
            answer = await self._batch.command(
                lambda pipe: pipe.eval(_OPEN_STREAM_LUA, 2, key, bucket, *args)
            )
        if answer == "full":
            raise too_many_streams(rates)
        wait = float(answer)
        if wait > 0:
            raise too_fast("stream", per_minute, wait)
        return _Slot(self, key, run_id)

    async def release(self, key: str, run_id: str) -> None:
        try:
            with translate_errors(self._where):
                await self._batch.command(lambda pipe: pipe.zrem(key, run_id))
        except TaskBackendUnavailable:
            self._unreleased.add((key, run_id))
            if self._releasing is None or self._releasing.done():
                self._releasing = asyncio.create_task(self._release_left())
            raise

    async def _release_left(self) -> None:
        while self._unreleased:
            await asyncio.sleep(RETRY_SECONDS)
            left = list(self._unreleased)
            try:
                await self._batch.execute(partial(_release_all, slots=left))
            except (RedisError, OSError):
                continue
            self._unreleased.difference_update(left)

    async def take(self, user: str, action: Action, rates: Rates | None = None) -> None:
        per_minute = (rates or self._rates).bucket(action)
        if not per_minute:
            return
        key = self._key(action, user)
        with translate_errors(self._where):
            wait = float(
                await self._batch.command(lambda pipe: pipe.eval(_TAKE_LUA, 1, key, per_minute))
            )
        if wait > 0:
            raise too_fast(action, per_minute, wait)

    async def close(self) -> None:
        if self._releasing is not None:
            self._releasing.cancel()
            await asyncio.gather(self._releasing, return_exceptions=True)
        await self._batch.close()

    def _key(self, kind: str, user: str) -> str:
        """`<prefix>limits:<kind>:<user>`; in a Redis Cluster the user is a hash tag, so a
        user's slots and bucket share the slot the script that takes both needs."""
        return f"{self._prefix}{kind}:" + (f"{{{user}}}" if self._tagged else user)


def _release_all(pipe: RedisPipeline, slots: list[tuple[str, str]]) -> None:
    for key, run_id in slots:
        pipe.zrem(key, run_id)
