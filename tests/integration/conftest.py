"""Fixtures the integration tests share: databases and backends to run on, fake upstreams,
a private Redis and a private PostgreSQL (for the tests that stop them), a Redis Cluster and a
Sentinel-managed Redis, a webhook receiver, and instances behind a load balancer on a
transaction pooler."""

from __future__ import annotations

import io
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from uvicorn.logging import AccessFormatter

from app.store.db import Database
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import Backend, process_env
from tests.support.cluster import Cluster
from tests.support.pgbouncer import PgBouncer
from tests.support.private_postgres import PostgresServer
from tests.support.processes import RedisServer
from tests.support.receiver import Receiver, running_receiver
from tests.support.redis_topologies import ClusterNodes, SentinelSet


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
    """The embedded defaults (SQLite, in-process tasks), then the production pair."""
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


@pytest.fixture
async def fake_search() -> AsyncIterator[FakeTavily]:
    async with FakeTavily().running() as fake:
        yield fake


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with running_receiver() as hooks:
        yield hooks


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own, which it may kill and start again."""
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterNodes]:
    """A Redis Cluster of three primaries, shared by the run's tests as the shared Redis is:
    each keeps to its own `redis_prefix`. A test that fails a node over starts its own."""
    cluster = ClusterNodes(tmp_path_factory.mktemp("redis-cluster"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def redis_sentinels(tmp_path: Path) -> Iterator[SentinelSet]:
    """A primary, a replica and three Sentinels of the test's own: it may kill the primary."""
    sentinels = SentinelSet(tmp_path / "sentinels")
    sentinels.start()
    try:
        yield sentinels
    finally:
        sentinels.stop()


@pytest.fixture
def pgbouncer(postgres_url: str) -> Iterator[PgBouncer]:
    """PgBouncer in transaction mode in front of the PostgreSQL of `postgres_url`."""
    pooler = PgBouncer(postgres_url)
    pooler.start()
    try:
        yield pooler
    finally:
        pooler.remove()


@pytest.fixture
async def cluster(
    tmp_path: Path,
    postgres_url: str,
    pgbouncer: PgBouncer,
    redis_url: str,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
) -> AsyncIterator[Cluster]:
    """Instances behind HAProxy, on the run's database through PgBouncer in transaction mode
    and on Redis, with the fake model and search; `await cluster.start()` starts three.

    As documented for a pooler (docs/operate/scaling.md): migrations are a step of their
    own on the direct connection, and the instances do not migrate.
    """
    instances = Cluster(
        tmp_path,
        {
            "DATABASE_URL": pgbouncer.url(postgres_url),
            "DB_TRANSACTION_POOLER": "true",
            "MIGRATE_DATABASE_URL": postgres_url,
            "AUTO_MIGRATE": "false",
            "REDIS_URL": redis_url,
            "REDIS_PREFIX": redis_prefix,
            **process_env(fake_llm, fake_search),
            # Each costs a LibreOffice run; the tests of report files and decks turn them on.
            "DEEP_REPORT_FORMATS": "none",
            "PPTX_PDF": "false",
            "LOG_LEVEL": "WARNING",
        },
    )
    try:
        yield instances
    finally:
        await instances.close()


@pytest.fixture
def access_log() -> Iterator[Callable[[], io.StringIO]]:
    """Start writing uvicorn's access log, at INFO, as a server would: called once the
    server runs, since uvicorn sets up its loggers (and drops other handlers) as it starts."""
    logger = logging.getLogger("uvicorn.access")
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s'))
    level = logger.level

    def start() -> io.StringIO:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        return out

    yield start
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL of the module's own, which its tests may stop and start."""
    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
def private_database(postgres_server: PostgresServer) -> str:
    """A fresh database on the private server, which is running when the test starts."""
    if not postgres_server.running():
        postgres_server.start()
    name = f"t_{uuid.uuid4().hex[:10]}"
    postgres_server.create_database(name)
    return postgres_server.url(name)
