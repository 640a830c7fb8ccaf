"""A dead instance's turn whose takeover meets Redis or the database unavailable is carried
on once it is back.

The live instance is the app as served (its own `TurnSuccessor` and `Sweeper`,
sweeping every beat), on a Redis of the test's own (and on SQLite and on
PostgreSQL), or on a PostgreSQL of the test's own; the dead instance left a
chat turn `running`, holding its conversation, and resigned, as a drained one
does. The server goes away just as the live instance first reaches for the
turn (when it builds the chat agent to carry it on), so the takeover fails
part-way (Redis: at its first step; the database: past the claim, reading the
turns above), and is back as soon as the instance says so in its log. Before,
a refused connection made that same sweep mark the turn `interrupted`, and a
timeout left it `running` until its claim expired (the take-over ran once
Redis answered, its reply lost); now the next sweep carries it on.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import BaseAgent
from app.agents.registry import AGENTS, AgentEntry
from app.agents.turn import AgentCore
from app.auth import LOCAL_USER
from app.config import Settings
from app.store.db import Database
from app.store.models import StoredTurn
from app.store.turns import SqlTurnStore
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import history, running_service, service_settings
from tests.integration.test_takeover_race import DEAD, died_running
from tests.support.logs import attached
from tests.support.polling import eventually
from tests.support.private_postgres import PostgresServer
from tests.support.processes import RedisServer

pytestmark = [pytest.mark.redis]


class OutageUntilWarning(logging.Handler):
    """A server away from `begin()` to the first warning the sweep logs: `down` takes it
    away, `up` brings it back."""

    def __init__(self, down: Callable[[], None], up: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self._down = down
        self._up = up
        self.on = False
        self.warnings: list[str] = []

    def begin(self) -> None:
        self._down()
        self.on = True

    def end(self) -> None:
        if self.on:
            self._up()
            self.on = False

    def emit(self, record: logging.LogRecord) -> None:
        self.warnings.append(record.getMessage())
        self.end()


@contextlib.contextmanager
def watching_the_sweep(outage: OutageUntilWarning) -> Iterator[OutageUntilWarning]:
    """The sweep's and the takeover's own warnings end the outage: not another part's (the
    heartbeat, say)."""
    with attached("app.tasks.sweeper", outage), attached("app.service.takeover", outage):
        yield outage
    outage.end()


@pytest.fixture
def lasting_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own that comes back with what it had when restarted."""
    server = RedisServer(tmp_path / "redis", "--appendonly", "yes", "--appendfsync", "always")
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(params=["frozen", "stopped"])
def outage(
    request: pytest.FixtureRequest, lasting_redis: RedisServer
) -> Iterator[OutageUntilWarning]:
    """Redis frozen (SIGSTOP: commands time out, and run once it answers again) or stopped
    (connections refused; it comes back with what it had, from its append-only file)."""
    if request.param == "stopped":
        handler = OutageUntilWarning(lasting_redis.kill, lasting_redis.start)
    else:
        handler = OutageUntilWarning(lasting_redis.freeze, lasting_redis.thaw)
    with watching_the_sweep(handler):
        yield handler


def away_from_the_first_takeover(outage: OutageUntilWarning) -> list[AgentEntry]:
    """The agents, the chat agent's first build (when the live instance first carries a chat
    turn on) beginning `outage`: the takeover's first step meets it."""
    [chat] = [entry for entry in AGENTS if entry.kind == "chat"]
    built = chat.load()

    def beginning(core: AgentCore, settings: Settings) -> BaseAgent:
        outage.begin()
        return built(core, settings)

    return [replace(chat, factory=beginning) if e is chat else e for e in AGENTS]


def live(
    tmp_path: Path, database_url: str, redis_url: str, prefix: str, fake_llm: FakeOpenAI
) -> Settings:
    """The live instance's settings: it counts the dead one dead after a second."""
    return service_settings(
        tmp_path,
        database_url,
        redis_url,
        redis_prefix=prefix,
        llm_base_url=fake_llm.base_url,
        instance_dead_seconds=1.0,
    )


async def carried_on(settings: Settings, agents: list[AgentEntry]) -> dict[str, Any]:
    """The dead instance's turn as the history shows it, once the live instance has ended it
    (the history answers 503 while the database is away)."""
    async with running_service(settings, agents) as client:

        async def ended() -> bool:
            response = await client.get("/session/conv-1")
            if response.status_code == 503:
                return False
            assert response.status_code == 200
            return bool(response.json()["data"]["messages"][0]["status"] != "running")

        await eventually(ended, within=30, what="the dead instance's turn to end")
        [message] = await history(client, "conv-1")
    return message


async def stored(database_url: str) -> StoredTurn:
    """The turn's row, read on connections of its own (the test's may have met the outage)."""
    async with Database.open(database_url, pool_size=1, migrate=False) as db:
        [row] = await SqlTurnStore(db, "reader").get_conversation(LOCAL_USER, "conv-1")
    return row


def assert_carried_on_once_back(
    outage: OutageUntilWarning, turn_id: int, row: StoredTurn, message: dict[str, Any], what: str
) -> None:
    """Told once, then the takeover told, with nothing marked interrupted."""
    [told, carried] = outage.warnings
    assert what in told
    assert carried.endswith("1 running turn(s) carried on here, 0 marked interrupted")
    assert row.status == "completed"
    assert (row.id, row.takeovers) == (turn_id, 1)
    assert row.instance_id != DEAD
    assert message["status"] == "completed"
    assert message["answer"]


async def test_a_takeover_that_meets_redis_unavailable_is_carried_on_once_it_is_back(
    tmp_path: Path,
    db: Database,
    database_url: str,
    lasting_redis: RedisServer,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    outage: OutageUntilWarning,
) -> None:
    turn_id, _ = await died_running(db, lasting_redis.url, redis_prefix, LOCAL_USER)
    settings = live(tmp_path, database_url, lasting_redis.url, redis_prefix, fake_llm)
    message = await carried_on(settings, away_from_the_first_takeover(outage))

    assert_carried_on_once_back(outage, turn_id, await stored(database_url), message, "Redis")


@pytest.mark.postgres
async def test_a_takeover_that_meets_the_database_down_is_carried_on_once_it_is_back(
    tmp_path: Path,
    postgres_server: PostgresServer,
    private_database: str,
    redis_url: str,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
) -> None:
    # Stopped at once, as a crash or a failover stops it: every connection drops.
    outage = OutageUntilWarning(postgres_server.stop, postgres_server.start)
    async with Database.open(private_database, pool_size=1, migrate=True) as db:
        turn_id, _ = await died_running(db, redis_url, redis_prefix, LOCAL_USER)
    settings = live(tmp_path, private_database, redis_url, redis_prefix, fake_llm)
    with watching_the_sweep(outage):
        message = await carried_on(settings, away_from_the_first_takeover(outage))

    row = await stored(private_database)
    assert_carried_on_once_back(outage, turn_id, row, message, "database")
