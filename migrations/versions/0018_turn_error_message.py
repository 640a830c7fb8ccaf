"""A failed turn's sentence: `ai_session.error_message`.

`error` keeps the error's code; this keeps what the stream's `error.message`
said, which names the step that failed and why, so the history shows the same
sentence after a reload. Older turns have none and show their code's fixed text.

Revision ID: 0018_turn_error_message
Revises: 0017_shared_conversations
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_turn_error_message"
down_revision: str | Sequence[str] | None = "0017_shared_conversations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ALTER, no batch copy: a copied SQLite table would lose 0007's search triggers.
    op.add_column("ai_session", sa.Column("error_message", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("ai_session", "error_message")
