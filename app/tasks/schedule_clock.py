"""The clock of scheduled runs: on every instance, it claims each due time once and starts it.

Each instance runs one. It sleeps until the earliest due time of any
enabled schedule (or `SCHEDULE_POLL_SECONDS`, so a schedule made on another
instance is seen), reads the due schedules (one indexed query), and for
each claims a due time in the database (`SqlSchedules.claim`: the
schedule moves on and the run's row is inserted in one transaction, unique
per due time), then hands the run to `StartRun`: the service that starts it
as an ordinary turn of the owner. Claims are the database's, not Redis's:
the due time and the run are one row, so nothing can run without its row,
and no second row can be made for it.

Due times missed while no instance ran give one run, the latest missed
(`SCHEDULE_CATCH_UP=one`), or none (`none`: a due time later than the grace
below is passed over). An instance that dies between its claim and the
turn's start leaves a `starting` row: the row stays (its due time is not
run again) and, once its instance is known dead (with Redis, by the
instances' heartbeats; without, any other instance is a past process, one
ran at a time), becomes `interrupted`, unless its turn began after all (the
instance died before it recorded that): then the run is that turn's. A run
whose turn began is a turn like any other: cut by its instance's death or
drain, it is carried on by another instance (app/service/takeover.py), and
its status is its turn's; the clock never touches it.

A draining instance claims nothing: its turns would be refused (`DRAINING`)
and the due time lost; the others claim it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

from app.config import SettingsPart
from app.core.drain import Drain
from app.core.recurrence import (
    Occurrence,
    Recurrence,
    RecurrenceError,
    format_wall,
    parse_wall,
)
from app.store.base import StoreError
from app.store.schedule_models import ScheduleRow, ScheduleRunRow
from app.store.schedules import SqlSchedules
from app.tasks.base import DeadInstances, TaskError

log = logging.getLogger(__name__)

CatchUp = Literal["one", "none"]
_BATCH = 100
"""Due schedules claimed in one tick; more are claimed at the next, at once."""
_LEAST_SLEEP = 0.2
"""Least wait between ticks: another instance's claim, not yet committed, is not read
again at once."""
DEAD_CLAIMER = "its instance stopped before the run began"


def utc_now() -> datetime:
    return datetime.now(UTC)


class ClockSettings(SettingsPart):
    schedule_poll_seconds: float
    schedule_catch_up: CatchUp
    task_ttl_seconds: int


class StartRun(Protocol):
    async def __call__(self, schedule: ScheduleRow, run: ScheduleRunRow) -> None:
        """Start the claimed run as a turn of the schedule's owner, and record it on the run's
        row (started, skipped or failed); never raises."""
        ...


@dataclass(frozen=True, slots=True)
class Plan:
    """What one due schedule does now."""

    due: Occurrence | None
    """The due time to run; None: none (missed with catch-up `none`, or nothing due)."""
    following: Occurrence | None
    """Its next due time after now; None: the series has ended."""
    series_start: str
    """The wall time its rule counts from from now on."""


def plan(schedule: ScheduleRow, now: datetime, catch_up: CatchUp, grace: timedelta) -> Plan:
    """Of the due times from `next_due` to `now`, the one to run (the latest; with `none`,
    only if not later than `grace`), and the next one."""
    assert schedule.next_due is not None
    recurrence = Recurrence.parse(schedule.rrule, schedule.cron, schedule.timezone)
    start = parse_wall(schedule.series_start)
    last, following = recurrence.latest(schedule.next_due, now, start)
    if last is None:
        return Plan(None, following, schedule.series_start)
    on_time = catch_up == "one" or now - last.at <= grace
    series_start = format_wall(recurrence.rebase(start, last))
    return Plan(last if on_time else None, following, series_start)


class ScheduleClock:
    """`start()` it once the parts it starts turns with are up; `close()` it before them."""

    def __init__(
        self,
        schedules: SqlSchedules,
        start_run: StartRun,
        settings: ClockSettings,
        instance_id: str,
        instances: DeadInstances | None,
        drain: Drain,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self._schedules = schedules
        self._drain = drain
        self._start_run = start_run
        self._poll = settings.schedule_poll_seconds
        self._catch_up = settings.schedule_catch_up
        self._ttl = settings.task_ttl_seconds
        self._instance_id = instance_id
        self._instances = instances
        self._now = now
        self.grace = timedelta(seconds=max(60.0, 3 * self._poll))
        """How late a due time may be run with catch-up `none`."""
        self._claim_wait = timedelta(seconds=self._poll)
        """How long a claim may wait for its turn before its claimer's life is asked about
        (a living claimer is never judged dead: the wait only saves asking)."""
        self._woken = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._loop = asyncio.create_task(self._run(), name="schedule-clock")

    async def close(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop

    def wake(self) -> None:
        """A schedule changed here: look at the due times again now, not at the next poll."""
        self._woken.set()

    async def tick(self) -> int:
        """Claim and start what is due now; how many runs were started."""
        if self._drain.draining:
            return 0
        now = self._now()
        started = 0
        for schedule in await self._schedules.due(now, _BATCH):
            run = await self._claim(schedule, now)
            if run is not None:
                await self._start_run(schedule, run)
                started += 1
        await self._interrupt_dead_claims(now)
        return started

    async def _claim(self, schedule: ScheduleRow, now: datetime) -> ScheduleRunRow | None:
        try:
            planned = await asyncio.to_thread(plan, schedule, now, self._catch_up, self.grace)
        except RecurrenceError as exc:
            # Checked when it was made; a rule this version reads otherwise stops here.
            log.warning("schedule %s paused: %s", schedule.id, exc)
            await self._schedules.pause(schedule.id, f"Its times could not be read: {exc}", now)
            return None
        following = planned.following.at if planned.following is not None else None
        due = planned.due.at if planned.due is not None else None
        return await self._schedules.claim(
            schedule, due, following, planned.series_start, self._instance_id, now
        )

    async def _interrupt_dead_claims(self, now: datetime) -> None:
        """Claims still `starting`, of instances that are dead: settled (`interrupted`, or
        their turn's if it began)."""
        waiting = await self._schedules.unstarted(now - self._claim_wait)
        others = {run: instance for run, instance in waiting if instance != self._instance_id}
        if not others:
            return
        if self._instances is None:
            dead = set(others.values())
        else:
            dead = set(await self._instances.dead_instances(set(others.values()), self._ttl))
        gone = [run for run, instance in others.items() if instance in dead]
        if await self._schedules.interrupt(gone, DEAD_CLAIMER):
            log.warning("%d scheduled run(s) interrupted: %s", len(gone), DEAD_CLAIMER)

    async def _sleep(self) -> None:
        wait = self._poll
        with contextlib.suppress(StoreError):
            earliest = await self._schedules.earliest_due()
            if earliest is not None:
                wait = min(wait, (earliest - self._now()).total_seconds())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._woken.wait(), max(wait, _LEAST_SLEEP))
        self._woken.clear()

    async def _run(self) -> None:
        failing = False
        while True:
            try:
                await self.tick()
                failing = False
            except (StoreError, TaskError) as exc:
                if not failing:
                    log.warning("cannot start scheduled runs yet: %s", exc)
                failing = True
            except Exception:
                log.exception("the schedule clock's tick failed")
            await self._sleep()
