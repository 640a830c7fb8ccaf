"""Schedules and their runs, in `schedule` and `schedule_run` (schedule_models.py).

A user reaches only their own rows (the `user_id` in every query); an admin's
reads and pauses pass no user. The clock's side is a claim: one transaction
moves the schedule's `next_due` on from the value the clock read (a compare
and set: of two instances, one moves it) and inserts the run for the due
time, unique per schedule, so a due time is never run twice even by two
instances that read different due times.

A run's conversation is chosen with its claim (a new one, or the schedule's
own), so a run whose claimer died is found by its turn, if one began: the
turn, carried on by another instance as any turn is, tells the run's status.
A run's status is its turn's once it has one (a join on `ai_session`);
before, and when no turn ever began, its own row's (`RunState`).

A deleted project takes its schedules with it (`delete_project_schedules`, in
the project's own transaction), as it takes its conversations.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, delete, exists, func, insert, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.db import Database
from app.store.models import AI_SESSION as TURNS
from app.store.schedule_models import SCHEDULE as SCHEDULES
from app.store.schedule_models import SCHEDULE_RUN as SCHEDULE_RUNS
from app.store.schedule_models import RunState, ScheduleRow, ScheduleRunRow, Trigger

_PAST = ("skipped", "starting")
"""Runs that say nothing of how the schedule fares: no failure, and no success either."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as it is read: its row, with the status and reason of its turn when it has one."""

    run: ScheduleRunRow
    status: str
    """Its turn's status (`running`, `completed`, `failed`, `stopped`, `paused`,
    `interrupted`; `deleted` when the turn is gone), else its own (`RunState`)."""
    reason: str | None


def new_id() -> str:
    return uuid.uuid4().hex


def _schedule(row: RowMapping) -> ScheduleRow:
    return ScheduleRow(**row)


def _status_columns() -> list[Any]:
    status = case(
        (SCHEDULE_RUNS.c.turn_id.is_(None), SCHEDULE_RUNS.c.status),
        else_=func.coalesce(TURNS.c.status, "deleted"),
    )
    return [
        SCHEDULE_RUNS,
        status.label("derived_status"),
        func.coalesce(SCHEDULE_RUNS.c.reason, TURNS.c.error).label("why"),
    ]


def _runs_query() -> Any:
    joined = SCHEDULE_RUNS.outerjoin(
        TURNS,
        and_(TURNS.c.id == SCHEDULE_RUNS.c.turn_id, TURNS.c.user_id == SCHEDULE_RUNS.c.user_id),
    )
    return select(*_status_columns()).select_from(joined)


def _record(row: RowMapping) -> RunRecord:
    values = {name: row[name] for name in SCHEDULE_RUNS.c.keys()}  # noqa: SIM118 (names, not columns)
    return RunRecord(ScheduleRunRow(**values), row["derived_status"], row["why"])


class SqlSchedules:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, schedule: ScheduleRow, most: int) -> bool:
        """Store a new schedule unless its user has `most` already (0: no limit); False then."""
        async with self._db.begin() as conn:
            if most:
                count = (
                    select(func.count())
                    .select_from(SCHEDULES)
                    .where(SCHEDULES.c.user_id == schedule.user_id)
                )
                if (await conn.execute(count)).scalar_one() >= most:
                    return False
            await conn.execute(insert(SCHEDULES).values(**_values(schedule)))
        return True

    async def get(self, user_id: str | None, schedule_id: str) -> ScheduleRow | None:
        """The user's schedule (any user's when `user_id` is None); None when not theirs."""
        stmt = select(SCHEDULES).where(SCHEDULES.c.id == schedule_id)
        if user_id is not None:
            stmt = stmt.where(SCHEDULES.c.user_id == user_id)
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _schedule(row)

    async def listed(self, user_id: str | None, limit: int) -> list[ScheduleRow]:
        """The user's schedules (every user's when None), newest first."""
        stmt = (
            select(SCHEDULES).order_by(SCHEDULES.c.create_time.desc(), SCHEDULES.c.id).limit(limit)
        )
        if user_id is not None:
            stmt = stmt.where(SCHEDULES.c.user_id == user_id)
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_schedule(row) for row in rows]

    async def save(self, schedule: ScheduleRow) -> bool:
        """Write every changeable column of the user's schedule; False when it is gone."""
        values = _values(schedule)
        for fixed in ("id", "user_id", "create_time", "conversation_id"):
            values.pop(fixed)
        stmt = (
            update(SCHEDULES)
            .where(SCHEDULES.c.id == schedule.id, SCHEDULES.c.user_id == schedule.user_id)
            .values(**values)
        )
        async with self._db.statement() as conn:
            return bool((await conn.execute(stmt)).rowcount)

    async def delete(self, user_id: str, schedule_id: str) -> bool:
        """Delete the schedule and its runs (their conversations stay); False when not theirs."""
        async with self._db.begin() as conn:
            gone = await conn.execute(
                delete(SCHEDULES).where(
                    SCHEDULES.c.id == schedule_id, SCHEDULES.c.user_id == user_id
                )
            )
            if not gone.rowcount:
                return False
            await conn.execute(
                delete(SCHEDULE_RUNS).where(SCHEDULE_RUNS.c.schedule_id == schedule_id)
            )
        return True

    async def pause(self, schedule_id: str, reason: str | None, now: datetime) -> bool:
        """Pause the schedule with `reason`, if it is enabled; whether it was."""
        stmt = (
            update(SCHEDULES)
            .where(SCHEDULES.c.id == schedule_id, SCHEDULES.c.enabled)
            .values(enabled=False, paused_reason=reason, update_time=now)
        )
        async with self._db.statement() as conn:
            return bool((await conn.execute(stmt)).rowcount)

    async def due(self, now: datetime, limit: int) -> list[ScheduleRow]:
        """Enabled schedules due at `now`, the longest due first."""
        stmt = (
            select(SCHEDULES)
            .where(SCHEDULES.c.enabled, SCHEDULES.c.next_due <= now)
            .order_by(SCHEDULES.c.next_due)
            .limit(limit)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_schedule(row) for row in rows]

    async def earliest_due(self) -> datetime | None:
        """The next due time of any enabled schedule."""
        stmt = select(func.min(SCHEDULES.c.next_due)).where(SCHEDULES.c.enabled)
        async with self._db.statement() as conn:
            value: datetime | None = (await conn.execute(stmt)).scalar_one_or_none()
        return value

    async def claim(
        self,
        schedule: ScheduleRow,
        due: datetime | None,
        next_due: datetime | None,
        series_start: str,
        instance_id: str,
        now: datetime,
    ) -> ScheduleRunRow | None:
        """Move the schedule on from the `next_due` it was read with, and claim `due` (None:
        move on without a run); the run, or None when another instance moved it first, it
        was paused meanwhile, or the due time is claimed already."""
        async with self._db.begin() as conn:
            moved = await conn.execute(
                update(SCHEDULES)
                .where(
                    SCHEDULES.c.id == schedule.id,
                    SCHEDULES.c.enabled,
                    SCHEDULES.c.next_due == schedule.next_due,
                )
                .values(next_due=next_due, series_start=series_start)
            )
            if not moved.rowcount or due is None:
                return None
            return await _insert_run(self._db, conn, schedule, "schedule", due, instance_id, now)

    async def claim_now(
        self, schedule: ScheduleRow, instance_id: str, now: datetime
    ) -> ScheduleRunRow | None:
        """A "run now" of the schedule, due at `now`."""
        async with self._db.begin() as conn:
            return await _insert_run(self._db, conn, schedule, "now", now, instance_id, now)

    async def started(
        self, run_id: str, conversation_id: str, turn_id: int | None, start_time: datetime
    ) -> None:
        """The run's turn began: from now on its status is the turn's."""
        stmt = (
            update(SCHEDULE_RUNS)
            .where(SCHEDULE_RUNS.c.id == run_id)
            .values(
                status="started",
                reason=None,
                conversation_id=conversation_id,
                turn_id=turn_id,
                start_time=start_time,
            )
        )
        async with self._db.statement() as conn:
            await conn.execute(stmt)

    async def settle(
        self, run_id: str, status: RunState, reason: str, conversation_id: str | None = None
    ) -> None:
        """The run ended before any turn began (skipped, refused)."""
        stmt = (
            update(SCHEDULE_RUNS)
            .where(SCHEDULE_RUNS.c.id == run_id)
            .values(status=status, reason=reason, conversation_id=conversation_id)
        )
        async with self._db.statement() as conn:
            await conn.execute(stmt)

    async def unstarted(self, claimed_before: datetime) -> list[tuple[str, str]]:
        """Runs claimed before then whose turn has not begun: (run id, claiming instance)."""
        stmt = select(SCHEDULE_RUNS.c.id, SCHEDULE_RUNS.c.instance_id).where(
            SCHEDULE_RUNS.c.status == "starting", SCHEDULE_RUNS.c.claimed_at < claimed_before
        )
        async with self._db.statement() as conn:
            return [(row.id, row.instance_id) for row in (await conn.execute(stmt)).all()]

    async def interrupt(self, run_ids: Sequence[str], reason: str) -> int:
        """Settle runs whose claimer died while they were `starting`: one whose turn began
        all the same (the claimer died before it could say so) is `started` with that turn,
        which another instance carries on as any turn; the others are `interrupted`. How
        many were interrupted."""
        if not run_ids:
            return 0
        starting = and_(SCHEDULE_RUNS.c.id.in_(run_ids), SCHEDULE_RUNS.c.status == "starting")
        # The run's turn: in its conversation, begun since its claim (a `same` conversation
        # has the earlier runs' turns too); the claimer's clock wrote both times.
        turns = select(TURNS.c.id, TURNS.c.create_time).where(
            TURNS.c.user_id == SCHEDULE_RUNS.c.user_id,
            TURNS.c.session_id == SCHEDULE_RUNS.c.conversation_id,
            TURNS.c.create_time >= SCHEDULE_RUNS.c.claimed_at,
        )
        began = turns.order_by(TURNS.c.id).limit(1)
        adopt = (
            update(SCHEDULE_RUNS)
            .where(starting, exists(turns))
            .values(
                status="started",
                reason=None,
                turn_id=began.with_only_columns(TURNS.c.id).scalar_subquery(),
                start_time=began.with_only_columns(TURNS.c.create_time).scalar_subquery(),
            )
        )
        lost = (
            update(SCHEDULE_RUNS)
            .where(starting)
            .values(status="interrupted", reason=reason, conversation_id=None)
        )
        async with self._db.begin() as conn:
            await conn.execute(adopt)
            return int((await conn.execute(lost)).rowcount)

    async def runs(self, schedule_id: str, limit: int) -> list[RunRecord]:
        """The schedule's runs, newest first."""
        stmt = (
            _runs_query()
            .where(SCHEDULE_RUNS.c.schedule_id == schedule_id)
            .order_by(SCHEDULE_RUNS.c.claimed_at.desc(), SCHEDULE_RUNS.c.id)
            .limit(limit)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_record(row) for row in rows]

    async def run(self, schedule_id: str, run_id: str) -> RunRecord | None:
        stmt = _runs_query().where(
            SCHEDULE_RUNS.c.schedule_id == schedule_id, SCHEDULE_RUNS.c.id == run_id
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _record(row)

    async def last_runs(self, schedule_ids: Iterable[str]) -> dict[str, RunRecord]:
        """Each schedule's newest run, for those that have one."""
        ids = list(schedule_ids)
        if not ids:
            return {}
        newest = (
            select(
                SCHEDULE_RUNS.c.schedule_id,
                func.max(SCHEDULE_RUNS.c.claimed_at).label("claimed_at"),
            )
            .where(SCHEDULE_RUNS.c.schedule_id.in_(ids))
            .group_by(SCHEDULE_RUNS.c.schedule_id)
            .subquery()
        )
        stmt = _runs_query().join(
            newest,
            and_(
                newest.c.schedule_id == SCHEDULE_RUNS.c.schedule_id,
                newest.c.claimed_at == SCHEDULE_RUNS.c.claimed_at,
            ),
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return {record.run.schedule_id: record for record in map(_record, rows)}

    async def recent_outcomes(self, schedule_id: str, count: int) -> list[RunRecord]:
        """Its last `count` runs that ended one way or another (not skipped, not starting),
        newest first: what says whether it keeps failing."""
        stmt = (
            _runs_query()
            .where(SCHEDULE_RUNS.c.schedule_id == schedule_id, SCHEDULE_RUNS.c.status.not_in(_PAST))
            .order_by(SCHEDULE_RUNS.c.claimed_at.desc(), SCHEDULE_RUNS.c.id)
            .limit(count)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_record(row) for row in rows]


async def _insert_run(
    db: Database,
    conn: Any,
    schedule: ScheduleRow,
    trigger: Trigger,
    due: datetime,
    instance_id: str,
    now: datetime,
) -> ScheduleRunRow | None:
    """The run row, or None when that due time is claimed already (the unique key)."""
    run = ScheduleRunRow(
        id=new_id(),
        schedule_id=schedule.id,
        user_id=schedule.user_id,
        trigger=trigger,
        due_time=due,
        claimed_at=now,
        instance_id=instance_id,
        status="starting",
        conversation_id=schedule.conversation_id if schedule.conversation == "same" else new_id(),
    )
    stmt = (
        db.upsert(SCHEDULE_RUNS)
        .values(**run.model_dump())
        .on_conflict_do_nothing(
            index_elements=[
                SCHEDULE_RUNS.c.schedule_id,
                SCHEDULE_RUNS.c.trigger,
                SCHEDULE_RUNS.c.due_time,
            ]
        )
        .returning(SCHEDULE_RUNS.c.id)
    )
    inserted = (await conn.execute(stmt)).one_or_none()
    return None if inserted is None else run


async def delete_project_schedules(conn: AsyncConnection, user_id: str, project_id: str) -> None:
    """In the caller's transaction: a deleted project's schedules and their runs go with it
    (the runs' conversations are the project's, deleted with it)."""
    schedules = select(SCHEDULES.c.id).where(
        SCHEDULES.c.user_id == user_id, SCHEDULES.c.project_id == project_id
    )
    await conn.execute(
        delete(SCHEDULE_RUNS).where(
            SCHEDULE_RUNS.c.user_id == user_id, SCHEDULE_RUNS.c.schedule_id.in_(schedules)
        )
    )
    await conn.execute(
        delete(SCHEDULES).where(
            SCHEDULES.c.user_id == user_id, SCHEDULES.c.project_id == project_id
        )
    )


def _values(schedule: ScheduleRow) -> dict[str, Any]:
    return {column: getattr(schedule, column) for column in SCHEDULES.c.keys()}  # noqa: SIM118
