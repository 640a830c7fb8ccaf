"""A dead instance's turn whose takeover meets Redis unavailable is carried on once it is back.

The live instance is the app as served (its own `TurnSuccessor` and `Sweeper`,
sweeping every beat), on SQLite and on PostgreSQL and a Redis of the test's
own; the dead instance left a chat turn `running`, holding its conversation,
and resigned, as a drained one does. Redis becomes unavailable just as the
live instance first reaches for the turn (when it builds the chat agent to
carry it on), so the takeover's first step fails, and is back as soon as the
instance says so in its log. Before, a refused connection made that same
sweep mark the turn `interrupted`, and a timeout left it `running` until its
claim expired (the take-over ran once Redis answered, its reply lost); now
the next sweep carries it on.
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


class OutageUntilWarning(logging.Handler):
    """Redis unavailable from `begin()` to the first warning the sweep logs: frozen (SIGSTOP:
    commands time out, and run once it answers again) or stopped (connections refused; it
    comes back with what it had, from its append-only file)."""

    def __init__(self, server: RedisServer, stopped: bool) -> None:
        super().__init__(logging.WARNING)
        self._server = server
        self._stopped = stopped
        self.url = server.url
        self.on = False
        self.warnings: list[str] = []

    def begin(self) -> None:
        if self._stopped:
            self._server.kill()
        else:
            self._server.freeze()
        self.on = True

    def end(self) -> None:
        if self.on:
            if self._stopped:
                self._server.start()
            else:
                self._server.thaw()
            self.on = False

    def emit(self, record: logging.LogRecord) -> None:
        self.warnings.append(record.getMessage())
        self.end()


@pytest.fixture(params=["frozen", "stopped"])
def outage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OutageUntilWarning]:
    server = RedisServer(tmp_path / "redis", "--appendonly", "yes", "--appendfsync", "always")
    server.start()
    handler = OutageUntilWarning(server, request.param == "stopped")
    try:
        # The sweep's and the takeover's own: not another part's (the heartbeat, say).
        with attached("app.tasks.sweeper", handler), attached("app.service.takeover", handler):
            yield handler
        handler.end()
    finally:
        server.kill()


async def test_a_takeover_that_meets_redis_unavailable_is_carried_on_once_it_is_back(
    tmp_path: Path,
    db: Database,
    database_url: str,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    outage: OutageUntilWarning,
) -> None:
    turn_id, _ = await died_running(db, outage.url, redis_prefix, LOCAL_USER)
    [chat] = [entry for entry in AGENTS if entry.kind == "chat"]
    built = chat.load()

    def freezing(core: AgentCore, settings: Settings) -> BaseAgent:
        """The chat agent, built when the live instance first carries a chat turn on."""
        outage.begin()
        return built(core, settings)

    agents = [replace(chat, factory=freezing) if e is chat else e for e in AGENTS]
    settings = service_settings(
        tmp_path,
        database_url,
        outage.url,
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
    [told, carried] = outage.warnings
    assert "Redis" in told
    assert carried.endswith("1 running turn(s) carried on here, 0 marked interrupted")
    assert row.status == "completed"
    assert (row.id, row.takeovers) == (turn_id, 1)
    assert row.instance_id != DEAD
    assert message["status"] == "completed"
    assert message["answer"]
