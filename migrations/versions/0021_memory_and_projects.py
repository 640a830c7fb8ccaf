"""User memory and projects: `user_memory`, `user_memory_setting`, `project`, `project_file`,
and a conversation's project (`ai_conversation_title.project_id`).

Revision ID: 0021_memory_and_projects
Revises: 0020_turn_takeovers
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021_memory_and_projects"
down_revision: str | Sequence[str] | None = "0020_turn_takeovers"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "user_memory",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("project_id", sa.String(32), nullable=True),
        sa.Column("source", sa.String(8), nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=True),
        sa.Column("turn_id", _ROW_ID, nullable=True),
        sa.Column("vector", sa.LargeBinary(), nullable=True),
        sa.Column("embedding_model", sa.String(128), nullable=True),
        sa.Column("create_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("update_time", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_user_memory_user_id_create_time", "user_memory", ["user_id", "create_time"])
    op.create_table(
        "user_memory_setting",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("update_time", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "project",
        sa.Column("project_id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("instructions", sa.Text(), nullable=False),
        sa.Column("default_kind", sa.String(32), nullable=True),
        sa.Column("default_model", sa.String(64), nullable=True),
        sa.Column("create_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("update_time", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_project_user_id_create_time", "project", ["user_id", "create_time"])
    op.create_table(
        "project_file",
        sa.Column("project_id", sa.String(32), primary_key=True),
        sa.Column("file_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("create_time", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_project_file_file_id", "project_file", ["file_id"])
    # A plain ADD COLUMN (no batch copy): SQLite adds a nullable column in place.
    op.add_column("ai_conversation_title", sa.Column("project_id", sa.String(32), nullable=True))
    op.create_index(
        "ix_ai_conversation_title_project", "ai_conversation_title", ["user_id", "project_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_ai_conversation_title_project", "ai_conversation_title")
    with op.batch_alter_table("ai_conversation_title") as batch:
        batch.drop_column("project_id")
    op.drop_table("project_file")
    op.drop_table("project")
    op.drop_table("user_memory_setting")
    op.drop_table("user_memory")
