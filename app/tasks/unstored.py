"""Turns whose final store is waiting for the database, kept where every instance finds them.

While a turn's final store fails (the database is away), its outcome is
kept here; once stored it is dropped. An outcome whose turn never got stored
(the database stayed away past `STORE_RETRY_SECONDS`, so the stream ended
`failed`, or the instance died while it waited) is stored by any instance's
`UnstoredSweeper` once the database is back, as long as the row is still
unfinished (`running`, or `interrupted` by the orphan sweep). With Redis the
outcomes are one hash, `{prefix}unstored`, each field a turn's row id and its
outcome's JSON, kept `UNSTORED_RETENTION_SECONDS` after the last one came
(`redis.unstored`).
Without Redis there is one instance and no other to hand them to:
`NoUnstoredTurns` keeps nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from app.store.base import StoreError, StoreUnavailable, TurnStore
from app.store.models import TurnOutcome
from app.tasks.base import TaskError

log = logging.getLogger(__name__)

UNSTORED_RETENTION_SECONDS = 7 * 24 * 3600.0
"""How long kept outcomes wait for a database that stays away (a week, then they go)."""


class UnstoredTurns(Protocol):
    async def keep(self, turn_id: int, outcome: TurnOutcome) -> None:
        """Keep the outcome until `drop`; raises `TaskError` when it cannot be kept."""
        ...

    async def drop(self, turn_id: int) -> None:
        """The turn is stored: forget its outcome. Raises `TaskError`."""
        ...

    async def kept(self) -> dict[int, TurnOutcome]:
        """Every outcome kept, by its turn's row id. Raises `TaskError`."""
        ...

    async def close(self) -> None: ...


class NoUnstoredTurns:
    """One instance alone: an outcome its own store gave up on has nowhere else to go."""

    async def keep(self, turn_id: int, outcome: TurnOutcome) -> None:
        return None

    async def drop(self, turn_id: int) -> None:
        return None

    async def kept(self) -> dict[int, TurnOutcome]:
        return {}

    async def close(self) -> None:
        return None


class UnstoredSweeper:
    """Every `period` seconds, store the kept outcomes whose turns are still unfinished.

    Each instance sweeps; two storing the same outcome write the same row twice,
    harmlessly. A turn whose row is gone (its conversation deleted) or already
    finished is dropped without a write.
    """

    def __init__(self, unstored: UnstoredTurns, store: TurnStore, period: float) -> None:
        self._unstored = unstored
        self._store = store
        self._period = period
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._sweep_forever(), name="unstored-sweeper")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def sweep(self) -> int:
        """Store what is kept, as far as the database and Redis allow; how many were stored.

        Raises `StoreUnavailable` (the database is still away) or `TaskError`. An outcome
        the database refuses for itself (a `StoreError` of its own) would be refused
        every time: it is dropped, and logged.
        """
        stored = 0
        for turn_id, outcome in (await self._unstored.kept()).items():
            try:
                if await self._store.finish_unfinished_turn(turn_id, outcome):
                    stored += 1
                    log.info("stored turn %s, whose own store had given up", turn_id)
            except StoreUnavailable:
                raise
            except StoreError as exc:
                log.error("dropped the kept answer of turn %s, refused: %s", turn_id, exc)
            await self._unstored.drop(turn_id)
        return stored

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self._period)
            try:
                await self.sweep()
            except (StoreError, TaskError) as exc:
                log.debug("unstored turns wait for the next sweep: %s", exc)
