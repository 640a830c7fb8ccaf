"""A user's verdict on an answer: `ai_session.rating` and `rating_comment`.

`up` or `down` (NULL: none given) and what the user said with it, so the
page can show it again and admins can read what users disliked.

Revision ID: 0015_turn_rating
Revises: 0014_page_turn_deck
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_turn_rating"
down_revision: str | Sequence[str] | None = "0014_page_turn_deck"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ALTERs, no batch copy: a copied SQLite table would lose 0007's search triggers.
    op.add_column("ai_session", sa.Column("rating", sa.String(length=8), nullable=True))
    op.add_column("ai_session", sa.Column("rating_comment", sa.Text(), nullable=True))
    # Rated turns only: admins read them back by time, and they are few.
    op.create_index(
        "ix_ai_session_rated",
        "ai_session",
        ["create_time"],
        postgresql_where=sa.text("rating IS NOT NULL"),
        sqlite_where=sa.text("rating IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_ai_session_rated", table_name="ai_session")
    op.drop_column("ai_session", "rating_comment")
    op.drop_column("ai_session", "rating")
