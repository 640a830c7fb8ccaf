"""The tables of scheduled runs: `schedule` (what to ask, and when) and `schedule_run` (each
due time claimed, one row).

Kept apart from `models.py` (the turns and files) as their own concept; declared
the same way and created by their own Alembic revision. `schedule_run` is unique
on (schedule, trigger, due time), so the database itself makes a due time run
once: of two instances claiming it, the second insert finds the first's row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlmodel import Field, SQLModel

from app.store.columns import UTCDateTime

Trigger = Literal["schedule", "now"]
"""What made a run: its schedule's due time, or a user's "run now"."""
RunState = Literal["starting", "started", "skipped", "failed", "interrupted"]
"""A run as its own row knows it: claimed and not started yet; started (its turn tells the
rest); skipped (its conversation was busy); failed before its turn began (refused); its
claimer died before its turn began."""


class ScheduleRow(SQLModel, table=True):
    """A user's schedule: a question asked of an agent on a recurrence."""

    __tablename__ = "schedule"
    __table_args__ = (
        Index("ix_schedule_user_create_time", "user_id", "create_time"),
        # What the clock reads every few seconds: the enabled schedules, by due time.
        Index(
            "ix_schedule_next_due",
            "next_due",
            postgresql_where=text("enabled"),
            sqlite_where=text("enabled"),
        ),
    )

    id: str = Field(sa_column=Column(String(32), primary_key=True))
    """The wire's `scheduleId`: random, made here."""
    user_id: str = Field(max_length=128)
    """Owner: its runs are their turns; every query filters on it (admins' aside)."""
    name: str = Field(max_length=200)
    kind: str = Field(max_length=32)
    """The agent that answers (`chat`, `deep`, ...)."""
    query: str = Field(sa_type=Text)
    rrule: str | None = Field(default=None, sa_type=Text)
    """An RFC 5545 RRULE (optionally after a DTSTART line); or `cron` instead."""
    cron: str | None = Field(default=None, max_length=128)
    timezone: str = Field(max_length=64)
    """The IANA zone its times are wall-clock times of."""
    model: str | None = Field(default=None, max_length=64)
    project_id: str | None = Field(default=None, max_length=64)
    conversation: str = Field(max_length=8)
    """`new`: each run in a new conversation; `same`: every run in `conversation_id`."""
    conversation_id: str = Field(max_length=128)
    """The conversation of a `same` schedule, chosen when it is made (its first run begins it)."""
    webhook_url: str | None = Field(default=None, max_length=2048)
    enabled: bool
    paused_reason: str | None = Field(default=None, sa_type=Text)
    """Why it paused itself (failures in a row) or an admin paused it; None otherwise."""
    series_start: str = Field(max_length=19)
    """The wall time (`YYYY-MM-DDTHH:MM:SS`, its zone's) its RRULE counts from; moved to each
    due time reached unless the rule has a COUNT (app/core/recurrence.py)."""
    next_due: datetime | None = Field(default=None, sa_type=UTCDateTime)
    """Its next due time; None once the series has ended."""
    create_time: datetime = Field(sa_type=UTCDateTime)
    update_time: datetime = Field(sa_type=UTCDateTime)


class ScheduleRunRow(SQLModel, table=True):
    """One due time claimed (or one "run now"), and the turn that answered it."""

    __tablename__ = "schedule_run"
    __table_args__ = (
        UniqueConstraint("schedule_id", "trigger", "due_time", name="uq_schedule_run_due"),
        Index("ix_schedule_run_schedule_claimed", "schedule_id", "claimed_at"),
        # Claims whose turn has not begun: a few at most, read to find dead claimers.
        Index(
            "ix_schedule_run_starting",
            "instance_id",
            postgresql_where=text("status = 'starting'"),
            sqlite_where=text("status = 'starting'"),
        ),
    )

    id: str = Field(sa_column=Column(String(32), primary_key=True))
    """The wire's `runId`."""
    schedule_id: str = Field(max_length=32)
    user_id: str = Field(max_length=128)
    trigger: str = Field(max_length=8)
    due_time: datetime = Field(sa_type=UTCDateTime)
    claimed_at: datetime = Field(sa_type=UTCDateTime)
    instance_id: str = Field(max_length=32)
    """The instance that claimed it: if it dies before the turn begins, the run is
    `interrupted` and its due time is not run again."""
    status: str = Field(max_length=16)
    reason: str | None = Field(default=None, sa_type=Text)
    """Why it was skipped, failed before its turn, or was interrupted."""
    start_time: datetime | None = Field(default=None, sa_type=UTCDateTime)
    conversation_id: str | None = Field(default=None, max_length=128)
    turn_id: int | None = Field(
        default=None, sa_type=BigInteger().with_variant(Integer(), "sqlite")
    )
    """The turn (`ai_session.id`) it began: its status is the run's."""


SCHEDULE: Table = ScheduleRow.__table__  # type: ignore[attr-defined]
SCHEDULE_RUN: Table = ScheduleRunRow.__table__  # type: ignore[attr-defined]
