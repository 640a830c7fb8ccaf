"""Keys users make (`auth_key`, only their SHA-256 kept) and admins' per-user limits (`user_limit`).

Revision ID: 0013_auth_keys
Revises: 0012_mcp_a2a_push_configs
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_auth_keys"
down_revision: str | Sequence[str] | None = "0012_mcp_a2a_push_configs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "auth_key",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_auth_key_user_id", "auth_key", ["user_id"])
    op.create_table(
        "user_limit",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("max_streams", sa.Integer(), nullable=True),
        sa.Column("streams_per_minute", sa.Integer(), nullable=True),
        sa.Column("uploads_per_minute", sa.Integer(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("user_limit")
    op.drop_index("ix_auth_key_user_id", table_name="auth_key")
    op.drop_table("auth_key")
