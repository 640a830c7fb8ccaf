"""The schedule clock's claims in the database, on SQLite and PostgreSQL alike.

A run whose claimer died while it was `starting` is settled: one whose turn began all the
same (the claimer died before it could record it) is that turn's, which another instance
carries on; one whose turn never began is `interrupted`, and its due time is not run again.
A draining instance claims nothing (its turn would be refused, the due time lost): another
instance claims it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.core.drain import Drain
from app.store.db import Database
from app.store.models import StoredTurn
from app.store.schedule_models import ScheduleRow, ScheduleRunRow
from app.store.schedules import SqlSchedules
from app.store.turns import SqlTurnStore
from app.tasks.schedule_clock import ClockSettings, ScheduleClock

DEAD = "its instance stopped before the run began"


def schedule(schedule_id: str, conversation: str) -> ScheduleRow:
    now = datetime.now(UTC)
    return ScheduleRow(
        id=schedule_id,
        user_id="alice",
        name="News",
        kind="chat",
        query="What changed?",
        rrule="FREQ=DAILY;BYHOUR=8;BYMINUTE=0",
        timezone="UTC",
        conversation=conversation,
        conversation_id=f"schedule-{schedule_id}",
        enabled=True,
        series_start="2024-01-01T00:00:00",
        next_due=now,
        create_time=now,
        update_time=now,
    )


async def claimed(schedules: SqlSchedules, row: ScheduleRow) -> ScheduleRunRow:
    await schedules.create(row, 0)
    run = await schedules.claim_now(row, "dead-instance", datetime.now(UTC))
    assert run is not None
    return run


def turn_in(conversation_id: str) -> StoredTurn:
    return StoredTurn(
        session_id=conversation_id, user_id="alice", agent_type="chat", question="What changed?"
    )


async def test_a_dead_claimers_run_is_its_turns_if_it_began_else_interrupted(db: Database) -> None:
    schedules = SqlSchedules(db)
    turns = SqlTurnStore(db)
    began = await claimed(schedules, schedule("a" * 32, "new"))
    assert began.conversation_id is not None
    turn_id = await turns.add_question(turn_in(began.conversation_id))
    # A `same` conversation has the earlier runs' turns: they are not this run's.
    same = schedule("b" * 32, "same")
    await turns.add_question(turn_in(same.conversation_id))
    never = await claimed(schedules, same)

    interrupted = await schedules.interrupt([began.id, never.id], DEAD)
    carried = await schedules.run(began.schedule_id, began.id)
    lost = await schedules.run(never.schedule_id, never.id)

    assert interrupted == 1
    assert carried is not None
    assert (carried.status, carried.run.turn_id, carried.reason) == ("running", turn_id, None)
    assert carried.run.conversation_id == began.conversation_id
    assert carried.run.start_time is not None
    assert lost is not None
    assert (lost.status, lost.run.turn_id, lost.reason) == ("interrupted", None, DEAD)
    assert lost.run.conversation_id is None


async def test_a_draining_instance_claims_nothing_and_another_claims_the_due_time(
    db: Database,
) -> None:
    schedules = SqlSchedules(db)
    now = datetime.now(UTC)
    eight = now.replace(hour=8, minute=0, second=0, microsecond=0)
    # Its latest 08:00, passed: due now.
    due = schedule("c" * 32, "new")
    due.next_due = eight if eight <= now else eight - timedelta(days=1)
    await schedules.create(due, 0)
    started: list[tuple[str, str]] = []

    async def start_run(schedule: ScheduleRow, run: ScheduleRunRow) -> None:
        started.append((run.instance_id, run.trigger))

    def clock(instance: str, drain: Drain) -> ScheduleClock:
        return ScheduleClock(schedules, start_run, ClockSettings.defaults(), instance, None, drain)

    draining = Drain()
    draining.begin()
    leaving = await clock("leaving", draining).tick()
    staying = await clock("staying", Drain()).tick()
    runs = await schedules.runs(due.id, 10)

    assert (leaving, staying) == (0, 1)
    assert started == [("staying", "schedule")]
    assert [(r.run.instance_id, r.run.due_time) for r in runs] == [("staying", due.next_due)]
