"""The instance running a turn: `ai_session.instance_id`.

Set when the question is stored, so a turn left `running` by an instance
that died is found by that instance's id and marked `interrupted` by
another one, and never a turn of an instance still alive. The index holds
running rows only, so the sweep that reads it stays as small as the turns
running now, however long the history grows.

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_RUNNING = sa.text("status = 'running'")


def upgrade() -> None:
    with op.batch_alter_table("ai_session") as table:
        table.add_column(sa.Column("instance_id", sa.String(length=32), nullable=True))
    op.create_index(
        "ix_ai_session_running_instance",
        "ai_session",
        ["instance_id"],
        postgresql_where=_RUNNING,
        sqlite_where=_RUNNING,
    )


def downgrade() -> None:
    op.drop_index("ix_ai_session_running_instance", table_name="ai_session")
    with op.batch_alter_table("ai_session") as table:
        table.drop_column("instance_id")
