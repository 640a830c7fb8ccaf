"""Whether a file's text came by text recognition: `ai_file.ocr`.

`/file/info` says so for a scanned PDF too, which only the reader knows at
upload; files stored before are false (OCR did not exist).

Revision ID: 0010_file_ocr
Revises: 0009_turn_models
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_file_ocr"
down_revision: str | Sequence[str] | None = "0009_turn_models"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "ai_file", sa.Column("ocr", sa.Boolean(), nullable=False, server_default=sa.false())
    )


def downgrade() -> None:
    op.drop_column("ai_file", "ocr")
