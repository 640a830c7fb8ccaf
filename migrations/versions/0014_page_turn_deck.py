"""A deck turn's slides: `ai_session.deck`.

The PowerPoint builder's last `deck` event of a turn (its slides, versions and
thumbnail URLs) as JSON, so a reopened conversation shows the deck as it was
shown live; NULL for every other turn.

Revision ID: 0014_page_turn_deck
Revises: 0013_auth_keys
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_page_turn_deck"
down_revision: str | Sequence[str] | None = "0013_auth_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ALTER, no batch copy: a copied SQLite table would lose 0007's search triggers.
    op.add_column("ai_session", sa.Column("deck", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("ai_session", "deck")
