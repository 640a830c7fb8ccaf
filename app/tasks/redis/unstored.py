"""Kept outcomes in Redis: one hash, `{prefix}unstored`, that every instance sweeps."""

from __future__ import annotations

import logging

from app.store.models import TurnOutcome
from app.tasks.redis.batch import SharedPipeline
from app.tasks.redis.client import RedisPipeline, milliseconds, translate_errors
from app.tasks.redis.target import RedisTarget
from app.tasks.unstored import UNSTORED_RETENTION_SECONDS

log = logging.getLogger(__name__)


class RedisUnstoredTurns:
    def __init__(self, target: RedisTarget | str, prefix: str, timeout: float = 2.0) -> None:
        target = RedisTarget.of(target)
        self._batch = SharedPipeline(target, timeout=timeout)
        self._where = target.where
        self._key = f"{prefix}unstored"

    async def keep(self, turn_id: int, outcome: TurnOutcome) -> None:
        def fill(pipe: RedisPipeline) -> None:
            pipe.hset(self._key, str(turn_id), outcome.model_dump_json())
            pipe.pexpire(self._key, milliseconds(UNSTORED_RETENTION_SECONDS))

        with translate_errors(self._where):
            await self._batch.execute(fill)

    async def drop(self, turn_id: int) -> None:
        with translate_errors(self._where):
            await self._batch.command(lambda pipe: pipe.hdel(self._key, str(turn_id)))

    async def kept(self) -> dict[int, TurnOutcome]:
        with translate_errors(self._where):
            fields = await self._batch.command(lambda pipe: pipe.hgetall(self._key))
        kept: dict[int, TurnOutcome] = {}
        for name, value in fields.items():
            try:
                kept[int(name)] = TurnOutcome.model_validate_json(value)
            except ValueError:  # a bad row id, or JSON that is no outcome (ValidationError)
                # Not ours to read (a newer version's?): left for the retention to end.
                log.warning("skipped kept outcome %r: it cannot be read", name)
        return kept

    async def close(self) -> None:
        await self._batch.close()
