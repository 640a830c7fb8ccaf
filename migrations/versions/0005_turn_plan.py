"""A deep research turn's plan: `ai_session.plan`.

Its rounds, their tasks with status and summary, and each round's critique,
so a reloaded page draws the plan as it stood when the turn ended.

Revision ID: 0005
Revises: 0004_pptx
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004_pptx"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ai_session") as table:
        table.add_column(sa.Column("plan", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ai_session") as table:
        table.drop_column("plan")
