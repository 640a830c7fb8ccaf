"""Shared fixtures: real PostgreSQL and Redis when the machine has them.

Tests that need a server ask for the `postgres_url` or `redis_url` fixture.
Without the server they skip with the reason; under CI (`CI=true`) that
skip is a failure instead, so CI cannot go green without having run them.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import NoReturn
from urllib.parse import urlsplit, urlunsplit

import pytest
import uvicorn.loops.auto

from app.llm.tokens import install_encodings

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


def unavailable(reason: str) -> NoReturn:
    """Skip for want of something on this machine; under CI (`CI=true`), fail instead."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def require_server(url: str, what: str) -> None:
    if not _reachable(url):
        unavailable(f"{what} is not reachable at {urlsplit(url).netloc}; start it to run this test")


def require_binary(program: str, what: str) -> None:
    """For tests that start a private server: its program must be installed."""
    if shutil.which(program) is None:
        unavailable(f"{what} is not installed; install it to run this test")


@pytest.fixture(scope="session", autouse=True)
def tiktoken_offline(tmp_path_factory: pytest.TempPathFactory) -> None:
    """tiktoken's files in place before any test counts a token, as the lifespan puts them
    before any turn: without it a test that counts before an app has started (run alone,
    or first) tries to download them."""
    install_encodings(tmp_path_factory.mktemp("tiktoken"))


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A database of this test run's own, so concurrent runs (CI, a developer) never collide.

    Made in the server named by POSTGRES_TEST_URL, dropped at the end of the run.
    """
    require_server(POSTGRES_TEST_URL, "PostgreSQL")
    import asyncpg

    base = urlsplit(POSTGRES_TEST_URL.replace("+asyncpg", ""))
    name = f"dodo_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(base.geturl())
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield urlunsplit(urlsplit(POSTGRES_TEST_URL)._replace(path=f"/{name}"))
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def postgres_url(postgres_database: str) -> str:
    """The run's database, emptied of our tables before the test."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(postgres_database)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()
    return postgres_database


@pytest.fixture
def redis_url() -> str:
    require_server(REDIS_TEST_URL, "Redis")
    return REDIS_TEST_URL


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of the test's own, so tests never see each other's keys or channels.

    Whatever the test left under it in the shared Redis (claims that would
    expire, but not soon) is deleted afterwards.
    """
    prefix = f"test-{uuid.uuid4().hex[:12]}:"
    yield prefix
    if _reachable(REDIS_TEST_URL):
        import redis

        with redis.Redis.from_url(REDIS_TEST_URL) as client:
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)


@pytest.fixture
def sqlite_url(tmp_path: os.PathLike[str]) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/app.db"


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every async test on the loop uvicorn serves the product on (uvloop when installed).

    The apps the tests drive run inside the test's loop, so a test on asyncio's own
    loop proves another product: the shell's `process_group=` worked here for months
    while every served skills turn failed on uvloop.
    """
    return {"served": uvicorn.loops.auto.auto_loop_factory(use_subprocess=False)}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """After each test, collect what it left and freeze what survives, as a served process
    freezes its start-up (`app.main.tune_for_serving`).

    What tests leave behind (each database engine keeps ~1,000 objects in SQLAlchemy's
    caches, each app more) grew this process to 4 million objects, and a full collection
    walked them all: pauses of up to 6 s in the middle of a test, long enough for a
    5 s database connect to time out. Frozen, they are never walked again; each
    collection here walks only what one test made.
    """
    result = yield
    gc.collect()
    gc.freeze()
    return result
