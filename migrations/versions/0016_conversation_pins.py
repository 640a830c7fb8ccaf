"""Pinned conversations: `ai_conversation_title.pinned_at`, and a title that may be unset.

A user's marks on a conversation share its row: a conversation pinned but never
renamed has a row with no title (still titled by its first question).

Revision ID: 0016_conversation_pins
Revises: 0015_turn_rating
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_conversation_pins"
down_revision: str | Sequence[str] | None = "0015_turn_rating"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A batch copy on SQLite is safe here: no trigger or virtual table hangs on this table.
    with op.batch_alter_table("ai_conversation_title") as batch:
        batch.alter_column("title", existing_type=sa.String(200), nullable=True)
        batch.add_column(sa.Column("pinned_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.execute("DELETE FROM ai_conversation_title WHERE title IS NULL")
    with op.batch_alter_table("ai_conversation_title") as batch:
        batch.drop_column("pinned_at")
        batch.alter_column("title", existing_type=sa.String(200), nullable=False)
