"""A2A push notification configs: `a2a_push_config`.

One row per config a client set on a task (`<conversationId>.<rowId>`),
stored so that the instance running the task can deliver it, whichever
instance the client set it on. Deleting a conversation deletes its rows.

Revision ID: 0012_mcp_a2a_push_configs
Revises: 0011_pending_approvals
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_mcp_a2a_push_configs"
down_revision: str | Sequence[str] | None = "0011_pending_approvals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "a2a_push_config",
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("task_id", sa.String(length=160), nullable=False),
        sa.Column("config_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=128), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("token", sa.Text(), nullable=True),
        sa.Column("auth_scheme", sa.String(length=64), nullable=True),
        sa.Column("auth_credentials", sa.Text(), nullable=True),
        sa.Column("create_time", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "task_id", "config_id"),
    )
    op.create_index(
        "ix_a2a_push_config_conversation", "a2a_push_config", ["user_id", "conversation_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_a2a_push_config_conversation", table_name="a2a_push_config")
    op.drop_table("a2a_push_config")
