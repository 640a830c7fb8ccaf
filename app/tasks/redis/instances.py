"""The dead-instance sweep's side in Redis: which instances died, and freeing their claims.

How an instance is judged dead is `liveness`'s; the sweep that uses
this is `sweeper`'s.

No instance can beat while Redis is away, so after an outage longer than
`dead_after` (a Sentinel failover with its default 30 s judgement is one)
every deadline has passed, the living's too. An instance that has just
reached Redis again judges no one dead for `dead_after`: by then every
instance alive has reached it too, and beaten.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from app.tasks.base import TaskBackendUnavailable
from app.tasks.redis.client import milliseconds, translate_errors
from app.tasks.redis.liveness import FREE_LUA, GIVE_UP_LUA, SWEEP_LUA
from app.tasks.redis.shared import RedisTaskSpace, message


class RedisInstances:
    def __init__(self, space: RedisTaskSpace, dead_after: float) -> None:
        self._redis = space.redis
        self._keys = space.keys
        self._where = space.where
        self._dead_after = dead_after
        self._cut_off = False
        """Whether this instance's last call failed to reach Redis."""
        self._judge_from = 0.0
        """When it may next report others dead (the loop's clock)."""

    @property
    def instance_id(self) -> str:
        return self._keys.instance_id

    @property
    def beat_interval(self) -> float:
        return self._dead_after / 5

    async def lead_sweep(self, interval: float) -> bool:
        with self._reaching():
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
        with self._reaching():
            dead = await self._redis.eval(
                SWEEP_LUA, 1, self._keys.instances, grace, milliseconds(kept), *sorted(holding)
            )
        if asyncio.get_running_loop().time() < self._judge_from:
            return []
        return [str(instance) for instance in dead if instance != self.instance_id]

    async def give_up(
        self, instance: str, conversations: Iterable[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        asked = list(conversations)
        async with self._redis.pipeline(transaction=False) as pipe:
            for user_id, conversation_id in asked:
                key = self._keys.claim(user_id, conversation_id)
                pipe.eval(GIVE_UP_LUA, 1, key, instance, self.instance_id)
            with translate_errors(self._where):
                given = await pipe.execute()
        return [pair for pair, ok in zip(asked, given, strict=True) if ok]

    async def free(self, conversations: Iterable[tuple[str, str]]) -> None:
        async with self._redis.pipeline(transaction=False) as pipe:
            for user_id, conversation_id in conversations:
                key = self._keys.claim(user_id, conversation_id)
                done = message(user_id, conversation_id)
                pipe.eval(FREE_LUA, 1, key, self.instance_id, self._keys.done_channel, done)
            with translate_errors(self._where):
                await pipe.execute()

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        """A call to Redis; the first to succeed after a failed one starts the wait to judge."""
        try:
            with translate_errors(self._where):
                yield
        except TaskBackendUnavailable:
            self._cut_off = True
            raise
        if self._cut_off:
            self._cut_off = False
            self._judge_from = asyncio.get_running_loop().time() + self._dead_after
