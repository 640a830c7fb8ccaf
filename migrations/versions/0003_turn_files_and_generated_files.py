"""Files a turn made: `ai_session.files`, and `ai_file.source` / `ai_file.session_id`.

A generated file (a deck, a skill's output) is stored like an upload but
belongs to the conversation that made it, so it goes when that is deleted.

Revision ID: 0003
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ai_session") as table:
        table.add_column(sa.Column("files", sa.Text(), nullable=True))
    with op.batch_alter_table("ai_file") as table:
        table.add_column(
            sa.Column("source", sa.String(16), nullable=False, server_default="upload")
        )
        table.add_column(sa.Column("session_id", sa.String(128), nullable=True))
    op.create_index("ix_ai_file_user_id_session_id", "ai_file", ["user_id", "session_id"])


def downgrade() -> None:
    op.drop_index("ix_ai_file_user_id_session_id", table_name="ai_file")
    with op.batch_alter_table("ai_file") as table:
        table.drop_column("session_id")
        table.drop_column("source")
    with op.batch_alter_table("ai_session") as table:
        table.drop_column("files")
