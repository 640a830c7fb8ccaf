"""Fixtures the end-to-end tests share: the backend pair to run on, and the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import Backend


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
