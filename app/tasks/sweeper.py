"""Turns of a dead instance go on elsewhere, or end `interrupted`, within seconds.

Each instance runs a sweeper; one of them at a time sweeps (a short lock
in Redis), every `beat_interval`: it reads which instances hold turns
stored `running` (the rows record their instance) and asks Redis which
instances are past their deadline (dead, or drained and resigned). Each
dead instance's running turns that can be carried on are taken over by
this instance (`Successor`: app/service/takeover.py); the rest are marked
`interrupted` and their claims dropped, so a new message is accepted there
at once, a resume ends, and the list of runs no longer shows them. An
instance alive by its own heartbeat is never swept, whatever the sweeping
instance's settings.

A dead instance is handled once per sweeper; Redis forgets it once its
claims would have expired anyway (the claim TTL).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from typing import Protocol

from app.store.base import StoreError
from app.tasks.base import DeadInstances, TaskError

log = logging.getLogger(__name__)


class OrphanRows(Protocol):
    """The turns as stored, seen by the instance that runs them."""

    async def running_instances(self) -> set[str]: ...

    async def interrupt_instance(self, instance_id: str) -> list[tuple[str, str]]:
        """Mark its running turns `interrupted`; their (user, conversation) pairs."""
        ...


class Successor(Protocol):
    """Who carries a dead instance's turns on."""

    async def carry_on(self, instance: str) -> int:
        """Take over the dead `instance`'s running turns that can go on; how many did."""
        ...


class Sweeper:
    """`start()` it after the task backend, `close()` it before (or when the instance drains:
    a draining instance takes nothing over)."""

    def __init__(
        self,
        instances: DeadInstances,
        rows: OrphanRows,
        *,
        ttl: float,
        successor: Successor | None = None,
    ) -> None:
        self._instances = instances
        self._rows = rows
        self._ttl = ttl
        self._successor = successor
        self._handled: set[str] = set()
        """Dead instances this sweeper has swept, while Redis still reports them."""
        self._loop: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._loop = asyncio.create_task(self._run(), name="dead-instance-sweeper")

    async def close(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            with suppress(asyncio.CancelledError):
                await self._loop

    async def sweep(self) -> int:
        """One sweep, if this instance leads it now; the turns marked `interrupted`."""
        if not await self._instances.lead_sweep(self._instances.beat_interval):
            return 0
        holding = await self._rows.running_instances()
        holding.discard(self._instances.instance_id)
        dead = await self._instances.dead_instances(holding, self._ttl)
        self._handled &= set(dead)
        marked = 0
        for instance in dead:
            if instance in self._handled:
                continue
            carried = 0
            if self._successor is not None:
                carried = await self._successor.carry_on(instance)
            conversations = await self._rows.interrupt_instance(instance)
            await self._instances.free(instance, conversations)
            self._handled.add(instance)
            marked += len(conversations)
            if conversations or carried:
                log.warning(
                    "instance %s is dead or drained: %d running turn(s) carried on here,"
                    " %d marked interrupted",
                    instance,
                    carried,
                    len(conversations),
                )
        return marked

    async def _run(self) -> None:
        failing = False
        while True:
            try:
                await self.sweep()
                failing = False
            except (TaskError, StoreError) as exc:
                if not failing:
                    log.warning("cannot sweep for dead instances yet: %s", exc)
                failing = True
            except Exception:
                log.exception("the dead-instance sweep failed")
            await asyncio.sleep(self._instances.beat_interval)
