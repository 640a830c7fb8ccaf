"""Behind a transaction pooler an instance never migrates through the pooler: a migration
may need a session, and every instance starting would hold a pooled connection for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.factory import create_app

POOLER = "postgresql+asyncpg://app@pgbouncer:6432/app"
DIRECT = "postgresql+asyncpg://app@postgres:5432/app"


def settings(tmp_path: Path, **values: Any) -> Settings:
    return Settings(
        _env_file=None, database_url=POOLER, data_dir=tmp_path, db_transaction_pooler=True, **values
    )


def test_a_pooler_with_migrations_at_start_up_and_no_direct_address_is_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match="MIGRATE_DATABASE_URL") as refused:
        create_app(settings(tmp_path))

    assert "AUTO_MIGRATE=false" in str(refused.value)


@pytest.mark.parametrize(
    "values", [{"migrate_database_url": DIRECT}, {"auto_migrate": False}], ids=["direct", "step"]
)
def test_a_pooler_with_a_direct_address_or_migrations_as_a_step_is_accepted(
    tmp_path: Path, values: dict[str, Any]
) -> None:
    create_app(settings(tmp_path, **values))


def test_migrations_run_on_the_direct_address_when_one_is_given(tmp_path: Path) -> None:
    assert settings(tmp_path, migrate_database_url=DIRECT).migration_url() == DIRECT
    assert settings(tmp_path).migration_url() == POOLER
