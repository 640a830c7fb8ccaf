"""Conversations shared by link: `ai_share`.

One row per shared conversation: the link's random token, and the last turn it
shows. Unsharing, or deleting the conversation, deletes the row.

Revision ID: 0017_shared_conversations
Revises: 0016_conversation_pins
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_shared_conversations"
down_revision: str | Sequence[str] | None = "0016_conversation_pins"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ai_share",
        sa.Column("token", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=False),
        sa.Column("turn_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("user_id", "conversation_id", name="uq_ai_share_conversation"),
    )


def downgrade() -> None:
    op.drop_table("ai_share")
