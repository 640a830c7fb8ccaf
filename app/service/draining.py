"""An instance going away without cutting a turn: the drain (SIGTERM) and the shutdown.

    begin (SIGTERM)   not ready (`/ready` 503), new turns refused (503 `DRAINING`),
                      nothing taken over from other instances
    grace             running turns get `DRAIN_SECONDS` to finish here
    hand over         those still running stop where they are: their logs are copied
                      out to the last event and their claims kept, for another instance
                      to carry them on (Redis); alone, they are stored `interrupted`
    resign            this instance counts as dead at once (Redis): the others take its
                      turns over at their next sweep, not `INSTANCE_DEAD_SECONDS` later
    end               open streams end (no `complete`): their clients resume elsewhere

`shutdown` is the same without the grace, for a shutdown that did not drain
(the app's lifespan ending: tests, SIGINT, a server that does not tell us).
A queued turn holds nothing to hand over: it leaves its queue, its stream ends
`complete{stopped}`, and its client sends it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from app.core.drain import Drain
from app.service.turns import TurnService
from app.tasks.base import TakeOvers, TaskError
from app.tasks.runs import RunRegistry
from app.tasks.sweeper import Sweeper

log = logging.getLogger(__name__)


class Drainer:
    """Built once in the lifespan; `begin()` on SIGTERM, `shutdown()` when the lifespan ends."""

    def __init__(
        self,
        drain: Drain,
        *,
        grace: float,
        runs: RunRegistry,
        turns: TurnService,
        sweeper: Sweeper | None,
        takeovers: TakeOvers | None,
    ) -> None:
        self.drain = drain
        self._grace = grace
        self._runs = runs
        self._turns = turns
        self._sweeper = sweeper
        self._takeovers = takeovers
        self._draining: asyncio.Task[None] | None = None
        self._hurry = asyncio.Event()
        self._shut = False

    def begin(self, then: Callable[[], object] = lambda: None) -> None:
        """Start draining (at once: `/ready` answers 503 from here); `then` once it is over.

        Asked again while draining, the grace is cut short.
        """
        if self._draining is not None:
            self._hurry.set()
            return
        self.drain.begin()
        log.warning(
            "draining: %d running turn(s) get %gs to finish", len(self._runs.running()), self._grace
        )
        self._draining = asyncio.create_task(self._drain(then), name="drain")

    async def shutdown(self) -> None:
        """Hand over (or store `interrupted`) what still runs, resign, end the open streams.

        Idempotent: the drain calls it, and the lifespan's end again.
        """
        self.drain.begin()
        if self._shut:
            return
        self._shut = True
        if self._sweeper is not None:
            await self._sweeper.close()
        await self._turns.shutdown()
        await self._runs.shutdown()
        if self._takeovers is not None:
            try:
                await self._takeovers.resign()
            except TaskError as exc:
                log.warning("could not resign (the others take over once it is silent): %s", exc)
        self.drain.end()

    async def _drain(self, then: Callable[[], object]) -> None:
        try:
            if self._sweeper is not None:
                await self._sweeper.close()
            settled = asyncio.create_task(self._runs.settle(self._grace))
            hurried = asyncio.create_task(self._hurry.wait())
            await asyncio.wait({settled, hurried}, return_when=asyncio.FIRST_COMPLETED)
            for task in (settled, hurried):
                task.cancel()
            moving = len(self._runs.running())
            await self.shutdown()
            log.warning("drained: %d turn(s) handed over or stopped", moving)
        except Exception:
            log.exception("the drain failed; shutting down anyway")
        finally:
            then()
