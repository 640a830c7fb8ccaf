"""Create ai_session: one row per turn of a conversation.

Revision ID: 0001
Revises:
Create Date: 2025-01-01 00:00:00

Columns are written out here, not imported from app.store.models, so this
revision keeps meaning what it meant when it was written.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ai_session",
        # BIGSERIAL on PostgreSQL; INTEGER on SQLite, where only that makes it the rowid.
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("agent_type", sa.String(32), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("thinking", sa.Text(), nullable=True),
        sa.Column("tools", sa.Text(), nullable=True),
        sa.Column("reference", sa.Text(), nullable=True),
        sa.Column("recommend", sa.Text(), nullable=True),
        sa.Column("fileid", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("first_response_time", sa.Integer(), nullable=True),
        sa.Column("total_response_time", sa.Integer(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("completion_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("create_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("update_time", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_ai_session_session_id", "ai_session", ["session_id"])
    op.create_index(
        "ix_ai_session_user_id_update_time", "ai_session", ["user_id", "update_time"]
    )


def downgrade() -> None:
    op.drop_index("ix_ai_session_user_id_update_time", table_name="ai_session")
    op.drop_index("ix_ai_session_session_id", table_name="ai_session")
    op.drop_table("ai_session")
