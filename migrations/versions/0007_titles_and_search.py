"""Conversation titles (`ai_conversation_title`) and the search index of the turns.

A title row only for a conversation its user renamed; the others are titled
by their first question when read, so a turn's cost stays its two writes.

Search finds a substring of a question or answer, case-insensitively, in any
script, so the index is of trigrams, not words (Chinese has no spaces):
on PostgreSQL `pg_trgm` GIN indexes on both columns (what `ILIKE '%q%'`
uses); on SQLite an FTS5 table with the trigram tokenizer, whose content is
`ai_session` itself (external content: the text is not stored twice), kept
in step by triggers. A later migration that rebuilds `ai_session` on SQLite
(a batch "move and copy") drops these triggers with the old table and must
create them again.

Revision ID: 0007_titles_and_search
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_titles_and_search"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_SEARCH = (
    "CREATE VIRTUAL TABLE ai_session_fts USING fts5("
    "question, answer, content='ai_session', content_rowid='id', tokenize='trigram')",
    "CREATE TRIGGER ai_session_fts_insert AFTER INSERT ON ai_session BEGIN"
    " INSERT INTO ai_session_fts(rowid, question, answer)"
    " VALUES (new.id, new.question, new.answer); END",
    "CREATE TRIGGER ai_session_fts_delete AFTER DELETE ON ai_session BEGIN"
    " INSERT INTO ai_session_fts(ai_session_fts, rowid, question, answer)"
    " VALUES ('delete', old.id, old.question, old.answer); END",
    "CREATE TRIGGER ai_session_fts_update AFTER UPDATE OF question, answer ON ai_session BEGIN"
    " INSERT INTO ai_session_fts(ai_session_fts, rowid, question, answer)"
    " VALUES ('delete', old.id, old.question, old.answer);"
    " INSERT INTO ai_session_fts(rowid, question, answer)"
    " VALUES (new.id, new.question, new.answer); END",
    # The turns stored before this revision.
    "INSERT INTO ai_session_fts(ai_session_fts) VALUES ('rebuild')",
)
_POSTGRES_SEARCH = (
    # Trusted since PostgreSQL 13: a user with CREATE on the database may add it.
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX ix_ai_session_question_trgm ON ai_session USING gin (question gin_trgm_ops)",
    "CREATE INDEX ix_ai_session_answer_trgm ON ai_session USING gin (answer gin_trgm_ops)",
)


def upgrade() -> None:
    op.create_table(
        "ai_conversation_title",
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("conversation_id", sa.String(length=128), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "conversation_id"),
    )
    search = _POSTGRES_SEARCH if op.get_context().dialect.name == "postgresql" else _SQLITE_SEARCH
    for statement in search:
        op.execute(statement)


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.drop_index("ix_ai_session_answer_trgm", table_name="ai_session")
        op.drop_index("ix_ai_session_question_trgm", table_name="ai_session")
    else:
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER ai_session_fts_{trigger}")
        op.execute("DROP TABLE ai_session_fts")
    op.drop_table("ai_conversation_title")
