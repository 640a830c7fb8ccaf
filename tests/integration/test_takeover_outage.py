"""A dead instance's turn whose takeover meets Redis unavailable is carried on once it is back.

The live instance is the app as served (its own `TurnSuccessor` and `Sweeper`,
sweeping every beat), on SQLite and on PostgreSQL and a Redis of the test's
own; the dead instance left a chat turn `running`, holding its conversation,
and resigned, as a drained one does. Redis stops answering (SIGSTOP) just as
the live instance first reaches for the turn (when it builds the chat agent
to carry it on), so the takeover's first step times out; Redis answers again
as soon as the instance says so in its log. Before, that same sweep then
marked the turn `interrupted`; now the next sweep carries it on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from app.agents.base import BaseAgent
from app.agents.registry import AGENTS
from app.agents.turn import AgentCore
from app.auth import LOCAL_USER
from app.config import Settings
from app.store.db import Database
from app.store.sessions import SqlSessionStore
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import history, running_service, service_settings
from tests.integration.test_takeover_race import DEAD, died_running
from tests.support.logs import attached
from tests.support.polling import eventually
from tests.support.processes import RedisServer

pytestmark = [pytest.mark.redis]


class ThawOnWarning(logging.Handler):
    """Lets the frozen Redis answer again at the first warning the app logs about it."""

    def __init__(self, server: RedisServer) -> None:
        super().__init__(logging.WARNING)
        self._server = server
        self.frozen = False
        self.warnings: list[str] = []

    def freeze(self) -> None:
        self._server.freeze()
        self.frozen = True

    def emit(self, record: logging.LogRecord) -> None:
        self.warnings.append(record.getMessage())
        if self.frozen:
            self._server.thaw()
            self.frozen = False


@pytest.fixture
def thawing(redis_server: RedisServer) -> Iterator[ThawOnWarning]:
    handler = ThawOnWarning(redis_server)
    with attached("app", handler):
        yield handler
    if handler.frozen:
        redis_server.thaw()


async def test_a_takeover_that_meets_redis_unavailable_is_carried_on_once_it_is_back(
    tmp_path: Path,
    db: Database,
    database_url: str,
    redis_server: RedisServer,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    thawing: ThawOnWarning,
) -> None:
    turn_id, _ = await died_running(db, redis_server.url, redis_prefix, LOCAL_USER)
    [chat] = [entry for entry in AGENTS if entry.kind == "chat"]
    built = chat.load()

    def freezing(core: AgentCore, settings: Settings) -> BaseAgent:
        """The chat agent, built when the live instance first carries a chat turn on."""
        thawing.freeze()
        return built(core, settings)

    agents = [replace(chat, factory=freezing) if e is chat else e for e in AGENTS]
    settings = service_settings(
        tmp_path,
        database_url,
        redis_server.url,
        redis_prefix=redis_prefix,
        llm_base_url=fake_llm.base_url,
        instance_dead_seconds=1.0,
    )
    store = SqlSessionStore(db, "reader")
    async with running_service(settings, agents) as client:

        async def ended() -> bool:
            [row] = await store.get_conversation(LOCAL_USER, "conv-1")
            return row.status != "running"

        await eventually(ended, within=30, what="the dead instance's turn to end")
        [message] = await history(client, "conv-1")
    [row] = await store.get_conversation(LOCAL_USER, "conv-1")

    # Told once, then the takeover told, with nothing marked interrupted.
    [outage, carried] = thawing.warnings
    assert "Redis" in outage
    assert carried.endswith("1 running turn(s) carried on here, 0 marked interrupted")
    assert row.status == "completed"
    assert (row.id, row.takeovers) == (turn_id, 1)
    assert row.instance_id != DEAD
    assert message["status"] == "completed"
    assert message["answer"]
