"""Turns carried on by another instance: `ai_session.takeovers` and `ai_session.carry_on`.

`takeovers` counts the times another instance took the running turn over (its
own died, or drained on a deploy); the conditional UPDATE that takes a turn
over matches it, so two instances never both take the same move, and past
`TURN_TAKEOVERS` the turn ends `interrupted`. `carry_on` keeps what the
request asked that the row does not hold otherwise (the tool approval mode,
the webhook), so the instance that carries the turn on honours it too.

Revision ID: 0020_turn_takeovers
Revises: 0019_user_preferences
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020_turn_takeovers"
down_revision: str | Sequence[str] | None = "0019_user_preferences"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ALTERs, no batch copy: a copied SQLite table would lose 0007's search triggers.
    op.add_column(
        "ai_session",
        sa.Column("takeovers", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column("ai_session", sa.Column("carry_on", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("ai_session", "carry_on")
    op.drop_column("ai_session", "takeovers")
