"""Conversation titles: `ai_conversation_title`.

A row only for a conversation its user renamed; the others are titled by
their first question when read, so a turn's cost stays its two writes.

Revision ID: 0007_titles_and_search
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_titles_and_search"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ai_conversation_title",
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("conversation_id", sa.String(length=128), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "conversation_id"),
    )


def downgrade() -> None:
    op.drop_table("ai_conversation_title")
