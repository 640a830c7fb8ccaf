"""The dead-instance sweep's side in Redis: which instances died, and freeing their claims.

How an instance is judged dead is `redis_liveness`'s; the sweep that uses
this is `sweeper`'s.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.tasks.redis_client import milliseconds, translate_errors
from app.tasks.redis_liveness import FREE_LUA, SWEEP_LUA
from app.tasks.redis_shared import RedisTaskSpace, message


class RedisInstances:
    def __init__(self, space: RedisTaskSpace, dead_after: float) -> None:
        self._redis = space.redis
        self._keys = space.keys
        self._where = space.where
        self._dead_after = dead_after

    @property
    def instance_id(self) -> str:
        return self._keys.instance_id

    @property
    def beat_interval(self) -> float:
        return self._dead_after / 5

    async def lead_sweep(self, interval: float) -> bool:
        with translate_errors(self._where):
            return bool(
                await self._redis.set(
                    f"{self._keys.prefix}sweeper",
                    self.instance_id,
                    nx=True,
                    px=milliseconds(interval),
                )
            )

    async def dead_instances(self, holding: set[str], kept: float) -> list[str]:
        grace = milliseconds(self._dead_after)
        with translate_errors(self._where):
            dead = await self._redis.eval(
                SWEEP_LUA, 1, self._keys.instances, grace, milliseconds(kept), *sorted(holding)
            )
        return [str(instance) for instance in dead if instance != self.instance_id]

    async def free(self, instance: str, conversations: Iterable[tuple[str, str]]) -> None:
        async with self._redis.pipeline(transaction=False) as pipe:
            for user_id, conversation_id in conversations:
                key = self._keys.claim(user_id, conversation_id)
                done = message(user_id, conversation_id)
                pipe.eval(FREE_LUA, 1, key, instance, self._keys.done_channel, done)
            with translate_errors(self._where):
                await pipe.execute()
