"""Create ai_ppt_inst and ai_ppt_template: the PowerPoint agent's builds and its templates.

The original service's tables and columns, plus `user_id`, `version`,
`failed_step` and `file_id`.

Revision ID: 0004_pptx
Revises: 0003
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_pptx"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ai_ppt_inst",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("conversation_id", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("template_code", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("requirement", sa.Text(), nullable=True),
        sa.Column("search_info", sa.Text(), nullable=True),
        sa.Column("outline", sa.Text(), nullable=True),
        sa.Column("ppt_schema", sa.Text(), nullable=True),
        sa.Column("file_id", sa.String(64), nullable=True),
        sa.Column("file_url", sa.String(255), nullable=True),
        sa.Column("failed_step", sa.String(16), nullable=True),
        sa.Column("error_msg", sa.Text(), nullable=True),
        sa.Column("create_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("update_time", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_ai_ppt_inst_user_conversation_version",
        "ai_ppt_inst",
        ["user_id", "conversation_id", "version"],
    )
    op.create_table(
        "ai_ppt_template",
        sa.Column("template_code", sa.String(64), primary_key=True),
        sa.Column("template_name", sa.String(128), nullable=False),
        sa.Column("template_desc", sa.Text(), nullable=False),
        sa.Column("template_schema", sa.Text(), nullable=False),
        sa.Column("file_path", sa.String(255), nullable=False),
        sa.Column("style_tags", sa.String(255), nullable=False),
        sa.Column("slide_count", sa.Integer(), nullable=False),
        sa.Column("update_time", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ai_ppt_template")
    op.drop_index("ix_ai_ppt_inst_user_conversation_version", table_name="ai_ppt_inst")
    op.drop_table("ai_ppt_inst")
