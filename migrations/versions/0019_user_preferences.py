"""A user's preferences, kept for every device they use (`user_preference`).

Revision ID: 0019_user_preferences
Revises: 0018_turn_error_message
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_user_preferences"
down_revision: str | Sequence[str] | None = "0018_turn_error_message"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "user_preference",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("model", sa.String(64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("user_preference")
