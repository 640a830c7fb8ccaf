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

Sweeps may overlap (the lead lasts one beat; a sweep under load, longer):
another instance's sweep may be taking a turn over while this one ends the
dead instance's turns. Each turn is ended only after its claim was taken from
the dead instance (`DeadInstances.give_up`), the step a takeover needs too,
so of the two exactly one happens.

A turn whose takeover met Redis or the database unavailable (an outage, a
pool timeout) is left `running`, not ended: the dead instance is not counted
handled, the sweep reports the outage once it has looked at every dead
instance (`_run` logs it once while it lasts), and the next sweep tries the
turn again, until it is carried on or truly cannot be.

A dead instance is handled once per sweeper; Redis forgets it once its
claims would have expired anyway (the claim TTL).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Protocol

from app.store.base import StoreError, StoreUnavailable
from app.store.models import StoredTurn
from app.tasks.base import DeadInstances, TaskBackendUnavailable, TaskError

log = logging.getLogger(__name__)


class OrphanRows(Protocol):
    """The turns as stored, seen by the instance that runs them."""

    async def running_instances(self) -> set[str]: ...

    async def running_turns(self, instance_id: str) -> list[StoredTurn]: ...

    async def interrupt_turns(self, turns: Sequence[StoredTurn]) -> list[tuple[str, str]]:
        """Mark those still running where they were read `interrupted`; their (user,
        conversation) pairs."""
        ...


Outage = StoreUnavailable | TaskBackendUnavailable
"""Redis or the database not reached (a pool timeout too): a takeover may work a moment later."""


@dataclass(frozen=True, slots=True)
class Succession:
    """What a successor did with a dead instance's running turns."""

    carried: int
    """How many it took over."""
    postponed: frozenset[int] = frozenset()
    """The turns (row ids) whose takeover met `outage`: for the next sweep, not to end now."""
    outage: Outage | None = None


class Successor(Protocol):
    """Who carries a dead instance's turns on."""

    async def carry_on(self, instance: str) -> Succession:
        """Take over the dead `instance`'s running turns that can go on."""
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
        outage: Outage | None = None
        for instance in dead:
            if instance in self._handled:
                continue
            done = Succession(0)
            if self._successor is not None:
                done = await self._successor.carry_on(instance)
            outage = outage or done.outage
            conversations, left = await self._interrupt(instance, done.postponed)
            if not left:
                self._handled.add(instance)
            marked += len(conversations)
            if conversations or done.carried:
                log.warning(
                    "instance %s is dead or drained: %d running turn(s) carried on here,"
                    " %d marked interrupted",
                    instance,
                    done.carried,
                    len(conversations),
                )
        if outage is not None:
            raise outage
        return marked

    async def _interrupt(
        self, instance: str, postponed: frozenset[int]
    ) -> tuple[list[tuple[str, str]], int]:
        """Mark `interrupted` the dead `instance`'s turns no instance took over, but those
        `postponed` (for the next sweep), and free them; the (user, conversation) pairs
        marked, and how many turns were left.

        Each turn's claim is taken from the dead instance first, in Redis: none is
        taken over once this sweep has it. A turn whose claim another instance holds is
        left, and looked at again next sweep: that instance is taking it over (its sweep
        overlapping this one, between its claim and its row), and the row soon names it;
        or a new turn took the conversation, and the turn left is ended once that one
        let go. Then the rows, each only while it still names the dead instance.
        """
        running = await self._rows.running_turns(instance)
        rows = [row for row in running if row.id not in postponed]
        if not rows:
            return [], len(running)
        given = set(
            await self._instances.give_up(instance, {(r.user_id, r.session_id) for r in rows})
        )
        ended = [row for row in rows if (row.user_id, row.session_id) in given]
        conversations = await self._rows.interrupt_turns(ended)
        await self._instances.free(given)
        return conversations, len(running) - len(ended)

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
