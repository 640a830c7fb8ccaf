"""A conversation's turns found by conversation and user together.

Every read of a conversation's turns names both (`session_id` and `user_id`).
With only `ix_ai_session_session_id (session_id)` and
`ix_ai_session_user_id_update_time (user_id, update_time)` to choose from,
SQLite's planner took the user's index for some of them (a turn's start asks
whether the conversation has turns: `EXISTS ... WHERE user_id = ? AND
session_id = ?`), so that read walked every turn the user ever had: 1 ms a
turn at 4,500 turns, growing with the history. The one index on both serves
those reads exactly and a read by conversation alone as its prefix, so it
replaces the conversation's index instead of adding a fourth write per row.

On a large PostgreSQL table `CREATE INDEX` holds the table's writes while it
builds; an operator may build it beforehand with `CREATE INDEX CONCURRENTLY
ix_ai_session_session_id_user_id ON ai_session (session_id, user_id)`, which
this migration then finds and keeps.

Revision ID: 0023_turns_by_conversation
Revises: 0022_schedules
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0023_turns_by_conversation"
down_revision: str | Sequence[str] | None = "0022_schedules"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_ai_session_session_id_user_id",
        "ai_session",
        ["session_id", "user_id"],
        if_not_exists=True,
    )
    op.drop_index("ix_ai_session_session_id", "ai_session")


def downgrade() -> None:
    op.create_index("ix_ai_session_session_id", "ai_session", ["session_id"])
    op.drop_index("ix_ai_session_session_id_user_id", "ai_session")
