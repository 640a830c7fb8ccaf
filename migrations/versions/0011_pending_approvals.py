"""A paused turn's pending decision: `ai_session.pending` and `ai_session.approval_id`.

`pending` is what the turn waits for (a tool call to approve, a plan to
review), as JSON; `approval_id` is the undecided approval's id in a column of
its own, so one UPDATE matching it takes the decision exactly once, on any
instance. Only paused turns have one: the index is partial where the
database allows it.

Revision ID: 0011_pending_approvals
Revises: 0010_file_ocr
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_pending_approvals"
down_revision: str | Sequence[str] | None = "0010_file_ocr"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ALTERs, no batch copy: a copied SQLite table would lose 0007's search triggers.
    op.add_column("ai_session", sa.Column("pending", sa.Text(), nullable=True))
    op.add_column("ai_session", sa.Column("approval_id", sa.String(64), nullable=True))
    op.create_index(
        "ix_ai_session_approval_id",
        "ai_session",
        ["approval_id"],
        postgresql_where=sa.text("approval_id IS NOT NULL"),
        sqlite_where=sa.text("approval_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_ai_session_approval_id", table_name="ai_session")
    op.drop_column("ai_session", "approval_id")
    op.drop_column("ai_session", "pending")
