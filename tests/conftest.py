"""Shared fixtures: real PostgreSQL and Redis when the machine has them.

Tests that need a server ask for the `postgres_url` or `redis_url` fixture.
Without the server they skip with the reason; under CI (`CI=true`) that
skip is a failure instead, so CI cannot go green without having run them.
"""

from __future__ import annotations

import os
import socket
import uuid
from urllib.parse import urlsplit

import pytest

POSTGRES_TEST_URL = os.environ.get(
    "POSTGRES_TEST_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REDIS_TEST_URL = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/15")


def _reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 0), 1.0):
            return True
    except OSError:
        return False


def require_server(url: str, what: str) -> None:
    if _reachable(url):
        return
    reason = f"{what} is not reachable at {urlsplit(url).netloc}; start it to run this test"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


@pytest.fixture
async def postgres_url() -> str:
    """The shared test database, emptied of our tables before the test."""
    require_server(POSTGRES_TEST_URL, "PostgreSQL")
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(POSTGRES_TEST_URL)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()
    return POSTGRES_TEST_URL


@pytest.fixture
def redis_url() -> str:
    require_server(REDIS_TEST_URL, "Redis")
    return REDIS_TEST_URL


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix of the test's own, so tests never see each other's keys or channels."""
    return f"test-{uuid.uuid4().hex[:12]}:"


@pytest.fixture
def sqlite_url(tmp_path: os.PathLike[str]) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/app.db"
