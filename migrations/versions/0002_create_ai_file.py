"""Create ai_file and ai_file_chunk: uploaded documents and their searchable passages.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02 00:00:00

Columns are written out here, not imported from app.store.models, so this
revision keeps meaning what it meant when it was written. Vectors are bytes
(BLOB on SQLite, bytea on PostgreSQL): portable, and no vector extension is
needed to search one file's passages.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ai_file",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("file_name", sa.String(255), nullable=False),
        sa.Column("mime_type", sa.String(128), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("blob_key", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("embedding_model", sa.String(128), nullable=True),
        sa.Column("create_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("update_time", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_ai_file_user_id_create_time", "ai_file", ["user_id", "create_time"])
    op.create_table(
        "ai_file_chunk",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("file_id", sa.String(64), sa.ForeignKey("ai_file.id"), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("unit", sa.String(16), nullable=False),
        sa.Column("first", sa.Integer(), nullable=False),
        sa.Column("last", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=True),
    )
    op.create_index(
        "ix_ai_file_chunk_file_id_seq", "ai_file_chunk", ["file_id", "seq"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ix_ai_file_chunk_file_id_seq", table_name="ai_file_chunk")
    op.drop_table("ai_file_chunk")
    op.drop_index("ix_ai_file_user_id_create_time", table_name="ai_file")
    op.drop_table("ai_file")
