"""A conversation as a tree of turns: `ai_session.parent_id` and `ai_active_path`.

Every existing conversation becomes one linear path: each turn's parent is
the turn before it (by id) in the same conversation, so its history and its
memory read exactly as before. `ai_active_path` stays empty until a user
switches branches or deletes a turn: until then a conversation's active
leaf is its newest turn.

No index on `parent_id`: every tree query reads one conversation by its
`session_id` index, or walks up from a turn by the primary key.

Revision ID: 0008_turn_tree
Revises: 0007_titles_and_search
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_turn_tree"
down_revision: str | Sequence[str] | None = "0007_titles_and_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

_LINEAR = sa.text(
    "UPDATE ai_session SET parent_id = ("
    " SELECT max(previous.id) FROM ai_session AS previous"
    " WHERE previous.session_id = ai_session.session_id"
    " AND previous.user_id = ai_session.user_id"
    " AND previous.id < ai_session.id)"
)


def upgrade() -> None:
    # Plain ALTERs, no batch copy: on SQLite a copied table would lose the search
    # triggers of 0007 (DROP COLUMN needs SQLite 3.35, which Python 3.11 builds bundle).
    op.add_column("ai_session", sa.Column("parent_id", _ID, nullable=True))
    op.execute(_LINEAR)
    op.create_table(
        "ai_active_path",
        sa.Column("user_id", sa.String(length=128), primary_key=True),
        sa.Column("conversation_id", sa.String(length=128), primary_key=True),
        sa.Column("leaf_id", _ID, nullable=False),
        sa.Column("newest_id", _ID, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ai_active_path")
    op.drop_column("ai_session", "parent_id")
