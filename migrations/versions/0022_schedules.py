"""Scheduled runs: `schedule` and `schedule_run`.

A schedule is a question asked of an agent on a recurrence; a run is one due
time claimed (unique per schedule, trigger and due time, so it runs once
across instances) and the turn that answered it.

Revision ID: 0022_schedules
Revises: 0021_memory_and_projects
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022_schedules"
down_revision: str | Sequence[str] | None = "0021_memory_and_projects"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "schedule",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("rrule", sa.Text(), nullable=True),
        sa.Column("cron", sa.String(128), nullable=True),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("model", sa.String(64), nullable=True),
        sa.Column("project_id", sa.String(64), nullable=True),
        sa.Column("conversation", sa.String(8), nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=False),
        sa.Column("webhook_url", sa.String(2048), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("paused_reason", sa.Text(), nullable=True),
        sa.Column("series_start", sa.String(19), nullable=False),
        sa.Column("next_due", sa.DateTime(timezone=True), nullable=True),
        sa.Column("create_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("update_time", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_schedule_user_create_time", "schedule", ["user_id", "create_time"])
    op.create_index(
        "ix_schedule_next_due",
        "schedule",
        ["next_due"],
        postgresql_where=sa.text("enabled"),
        sqlite_where=sa.text("enabled"),
    )
    op.create_table(
        "schedule_run",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("schedule_id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("trigger", sa.String(8), nullable=False),
        sa.Column("due_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("instance_id", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("start_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("conversation_id", sa.String(128), nullable=True),
        sa.Column(
            "turn_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.UniqueConstraint("schedule_id", "trigger", "due_time", name="uq_schedule_run_due"),
    )
    op.create_index(
        "ix_schedule_run_schedule_claimed", "schedule_run", ["schedule_id", "claimed_at"]
    )
    op.create_index(
        "ix_schedule_run_starting",
        "schedule_run",
        ["instance_id"],
        postgresql_where=sa.text("status = 'starting'"),
        sqlite_where=sa.text("status = 'starting'"),
    )


def downgrade() -> None:
    op.drop_table("schedule_run")
    op.drop_table("schedule")
