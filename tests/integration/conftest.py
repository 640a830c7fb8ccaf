"""Fixtures the integration tests share: the databases and backends to run on, the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.store.db import Database
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import Backend


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str:
    """Each test runs on SQLite and on PostgreSQL."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    """A migrated database on `database_url`."""
    async with Database.open(database_url, pool_size=5, migrate=True) as database:
        yield database


@pytest.fixture(params=["sqlite-memory", "postgres-redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each test runs twice: on the embedded defaults, and on the production pair."""
    prefix: str = request.getfixturevalue("redis_prefix")
    if request.param == "sqlite-memory":
        return Backend(f"sqlite+aiosqlite:///{tmp_path}/app.db", "", prefix)
    return Backend(
        request.getfixturevalue("postgres_url"), request.getfixturevalue("redis_url"), prefix
    )


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake
