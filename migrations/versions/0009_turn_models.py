"""The model each turn was answered by, and what it cost: `ai_session.model`, `cost_usd`,
`usage_by_model`.

Plain ALTERs, no batch copy: on SQLite a copied table would lose the search
triggers of 0007. Turns stored before stay NULL: their model was the one
`LLM_*` model of the time, whose prices nobody had given.

Revision ID: 0009_turn_models
Revises: 0008_turn_tree
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_turn_models"
down_revision: str | Sequence[str] | None = "0008_turn_tree"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("ai_session", sa.Column("model", sa.String(length=64), nullable=True))
    op.add_column("ai_session", sa.Column("cost_usd", sa.Float(precision=53), nullable=True))
    op.add_column("ai_session", sa.Column("usage_by_model", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("ai_session", "usage_by_model")
    op.drop_column("ai_session", "cost_usd")
    op.drop_column("ai_session", "model")
