"""Dependencies failing under a running service: Redis restarted, the database down.

Each test owns the server it breaks (a private redis-server or PostgreSQL
cluster on a free port) and never touches the shared ones. A database
restart under a batch of turns must cost no answer a client saw completed,
and no deep research after it; a database away for longer than the store
waits must end the turn failed, never completed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.agents.agent_turn import SAVING_NOTICE
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import ask, history, resume, running_service, service_settings
from tests.support.logs import LogSignal, attached
from tests.support.polling import eventually
from tests.support.private_postgres import PostgresServer
from tests.support.processes import RedisServer
from tests.support.research import REPORT, Researcher
from tests.support.sse import Event, collect, events, text_of

ANSWER = "The answer arrives in several parts."
BATCH = 20
"""Turns running at once through the restart."""
OUTAGE_SECONDS = 8.0
"""How long the restarted database stays away: longer than every turn's remaining answer, and
than the 7.5 s of retries the final store once gave up after (a routine restart took 10 s)."""
PLAN = orjson.dumps({"tasks": [{"id": "a", "title": "Market size"}]}).decode()


@pytest.fixture
def store_retries() -> Iterator[LogSignal]:
    """Seen when the agent reports a failed final store it is about to retry."""
    with attached("app.agents.base", LogSignal("retrying")) as signal:
        yield signal


async def stream(
    client: httpx.AsyncClient, params: dict[str, str], at_first_text: Callable[[], Awaitable[None]]
) -> list[Event]:
    """Read a whole stream, breaking something (`at_first_text`) once the answer has begun."""
    seen: list[Event] = []
    async with client.stream("GET", "/agent/chat/stream", params=params) as response:
        assert response.status_code == 200
        async for event in events(response):
            seen.append(event)
            if event["type"] == "text" and not text_of(seen[:-1]):
                await at_first_text()
    return seen


@pytest.mark.redis
async def test_redis_restarted_mid_run_loses_no_answer_and_is_used_again_once_back(
    tmp_path: Path,
    postgres_url: str,
    redis_server: RedisServer,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
) -> None:
    fake_llm.script(Reply.text(ANSWER, chunks=6, delay=0.1), Reply.text("Back again."))
    settings = service_settings(
        tmp_path,
        postgres_url,
        redis_server.url,
        redis_prefix=redis_prefix,
        llm_base_url=fake_llm.base_url,
    )
    params = {"query": "Go on", "conversationId": "c-redis"}
    async with running_service(settings) as client:
        seen = await stream(client, params, lambda: asyncio.to_thread(redis_server.kill))
        stored = await history(client, "c-redis")
        asked_at = time.monotonic()
        refused = await client.get("/agent/chat/stream", params=params)
        refused_after = time.monotonic() - asked_at
        await asyncio.to_thread(redis_server.start)
        back = await ask(client, "And now?", "c-redis")

    assert seen[-1]["status"] == "completed"
    assert text_of(seen) == ANSWER
    assert (stored[0]["status"], stored[0]["answer"]) == ("completed", ANSWER)
    assert refused.status_code == 503
    assert "Redis" in refused.json()["message"]
    assert refused_after < 3.0
    assert back[-1]["status"] == "completed"
    assert text_of(back) == "Back again."


@pytest.mark.redis
async def test_redis_down_listing_stopping_and_rejoining_runs_answer_503_naming_it(
    tmp_path: Path, postgres_url: str, redis_server: RedisServer, redis_prefix: str
) -> None:
    """Not a 500: each says Redis is what is down, and each answers again once it is back."""
    settings = service_settings(
        tmp_path,
        postgres_url,
        redis_server.url,
        redis_prefix=redis_prefix,
        api_keys="key-root:root",
        admin_users="root",
    )
    asks = [
        ("/agent/runs", {}),
        ("/admin/runs", {}),
        ("/agent/stop", {"conversationId": "c-down"}),
        ("/agent/resume", {"conversationId": "c-down", "lastEventId": "0"}),
        ("/ai-sdk/chat/c-down/stream", {}),
    ]
    async with running_service(settings) as client:
        client.headers["Authorization"] = "Bearer key-root"
        await asyncio.to_thread(redis_server.kill)
        down = [await client.get(path, params=params) for path, params in asks]
        await asyncio.to_thread(redis_server.start)
        back = [(await client.get(path, params=params)).status_code for path, params in asks]

    assert [(r.status_code, "(Redis)" in r.json()["message"]) for r in down] == [(503, True)] * 5
    assert back == [200, 200, 200, 404, 204]


@pytest.mark.postgres
async def test_database_down_answers_503_before_streaming_and_recovers(
    tmp_path: Path,
    postgres_server: PostgresServer,
    private_database: str,
    fake_llm: FakeOpenAI,
) -> None:
    fake_llm.script(Reply.text("First."), Reply.text("Second."))
    settings = service_settings(tmp_path, private_database, llm_base_url=fake_llm.base_url)
    async with running_service(settings) as client:
        await ask(client, "One", "c-db")
        await asyncio.to_thread(postgres_server.stop)
        asked_at = time.monotonic()
        refused = await client.get(
            "/agent/chat/stream", params={"query": "Two", "conversationId": "c-db"}
        )
        refused_after = time.monotonic() - asked_at
        await asyncio.to_thread(postgres_server.start)
        again = await ask(client, "Three", "c-db")
        stored = await history(client, "c-db")

    assert refused.status_code == 503
    assert "database" in refused.json()["message"]
    assert refused_after < 5.0
    assert again[-1]["status"] == "completed"
    assert [(t["question"], t["answer"]) for t in stored] == [
        ("One", "First."),
        ("Three", "Second."),
    ]
    assert len(fake_llm.requests) == 2


@pytest.mark.postgres
async def test_a_database_restart_under_a_batch_of_turns_loses_no_answer_nor_the_next_research(
    tmp_path: Path,
    postgres_server: PostgresServer,
    private_database: str,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
) -> None:
    """Every turn's answer ends while the database restarts; each is stored once it is back.

    A second instance runs deep research on the same database: its checkpoint
    pool held connections from before the restart, and must not lend them.
    """
    fake_llm.script(*(Reply.text(numbered(n), chunks=10, delay=0.15) for n in range(BATCH)))
    chat = service_settings(
        tmp_path / "chat",
        private_database,
        llm_base_url=fake_llm.base_url,
        max_streams_per_user=0,
        streams_per_minute=0,
    )
    deep = service_settings(
        tmp_path / "deep",
        private_database,
        tavily_api_key="tvly-test",
        tavily_base_url=fake_search.base_url,
    )
    researcher = Researcher(PLAN, PLAN)
    begun: list[int] = []
    all_begun = asyncio.Event()

    async def one_more() -> None:
        begun.append(1)
        if len(begun) == BATCH:
            all_begun.set()

    async def restart() -> None:
        async with asyncio.timeout(30):
            await all_begun.wait()
        await asyncio.to_thread(postgres_server.restart, OUTAGE_SECONDS)

    async with (
        running_service(chat) as client,
        running_service(deep, model=researcher.model()) as research,
    ):
        before = await ask(research, "How big is the heat pump market?", "c-deep-1", "deep")
        restarting = asyncio.create_task(restart())
        seen = await asyncio.gather(
            *(
                stream(client, {"query": f"Q{n}", "conversationId": f"c-{n}"}, one_more)
                for n in range(BATCH)
            )
        )
        await restarting
        stored = [await history(client, f"c-{n}") for n in range(BATCH)]
        after = await ask(research, "And the running costs?", "c-deep-2", "deep")
        ready = await research.get("/ready")

    assert before[-1]["status"] == "completed"
    assert [s[-1]["status"] for s in seen] == ["completed"] * BATCH
    assert [(t[0]["status"], t[0]["answer"]) for t in stored] == [
        ("completed", text_of(s)) for s in seen
    ]
    assert sorted(text_of(s) for s in seen) == sorted(numbered(n) for n in range(BATCH))
    waited = [s for s in seen if SAVING_NOTICE in text_of(s, "thinking")]
    assert waited, "no turn ended while the database was away: the test did not test the wait"
    assert after[-1]["status"] == "completed"
    assert REPORT in text_of(after)
    assert ready.status_code == 200


@pytest.mark.postgres
async def test_ready_is_true_of_every_pool_at_once_after_a_database_restart(
    tmp_path: Path,
    postgres_server: PostgresServer,
    private_database: str,
    fake_search: FakeTavily,
) -> None:
    """`/ready` lends a connection from each pool (SQLAlchemy's, asyncpg's, the checkpoints'):
    the first answer after a restart must not come from a connection the restart closed."""
    settings = service_settings(
        tmp_path, private_database, tavily_api_key="tvly-test", tavily_base_url=fake_search.base_url
    )
    async with running_service(settings, model=Researcher().model()) as client:
        before = await client.get("/ready")
        await asyncio.to_thread(postgres_server.stop, "fast")
        down = await client.get("/ready")
        await asyncio.to_thread(postgres_server.start)
        back = await client.get("/ready")

    assert (before.status_code, before.json()["checks"]["database"]) == (200, "ok")
    assert (down.status_code, down.json()["checks"]["database"]) == (503, "unavailable")
    assert (back.status_code, back.json()["checks"]["database"]) == (200, "ok")


def numbered(number: int) -> str:
    return f"Answer {number} streams in ten parts, and every part of it is kept."


@pytest.mark.postgres
async def test_a_final_store_that_fails_is_retried_until_the_database_is_back(
    tmp_path: Path,
    postgres_server: PostgresServer,
    private_database: str,
    fake_llm: FakeOpenAI,
    store_retries: LogSignal,
) -> None:
    fake_llm.script(Reply.hang(first_text="Kept"))
    settings = service_settings(
        tmp_path, private_database, llm_base_url=fake_llm.base_url, store_retry_seconds=30
    )
    params = {"query": "Keep it", "conversationId": "c-retry"}
    async with running_service(settings) as client:

        async def blip() -> None:
            """Stop the run while the database is down; bring it back once a retry is due."""
            await asyncio.to_thread(postgres_server.stop)
            stop = asyncio.create_task(
                client.get("/agent/stop", params={"conversationId": "c-retry"})
            )
            async with asyncio.timeout(10):
                await store_retries.seen.wait()
            await asyncio.to_thread(postgres_server.start)
            assert (await stop).json()["success"] is True

        seen = await stream(client, params, blip)
        stored = await history(client, "c-retry")
        metrics = (await client.get("/metrics")).text

    assert [(e["type"], e.get("content"), e.get("status")) for e in seen[-2:]] == [
        ("thinking", SAVING_NOTICE, None),
        ("complete", None, "stopped"),
    ]
    assert [(t["status"], t["answer"]) for t in stored] == [("stopped", "Kept")]
    (retries,) = [
        sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "dodo_store_retries_total"
    ]
    assert retries >= 1


@pytest.mark.postgres
@pytest.mark.redis
async def test_a_database_away_longer_than_the_store_waits_fails_the_turn_and_another_stores_it(
    tmp_path: Path,
    postgres_server: PostgresServer,
    private_database: str,
    redis_url: str,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The answer ends after the database went down: never `completed`. Another instance
    reads the whole answer from the run's log in Redis meanwhile, and stores the turn once
    the database is back."""
    caplog.set_level(logging.WARNING, logger="app.agents.base")
    fake_llm.script(Reply.text(ANSWER, chunks=6, delay=0.1))
    settings = service_settings(
        tmp_path,
        private_database,
        redis_url,
        redis_prefix=redis_prefix,
        llm_base_url=fake_llm.base_url,
        store_retry_seconds=1.0,
    )
    other = settings.model_copy(
        update={"data_dir": tmp_path / "other", "unstored_sweep_seconds": 0.2}
    )
    params = {"query": "Lose it", "conversationId": "c-lost"}
    async with running_service(settings) as client, running_service(other) as elsewhere:
        seen = await stream(client, params, lambda: asyncio.to_thread(postgres_server.stop))
        resume = {"conversationId": "c-lost", "lastEventId": "0"}
        async with elsewhere.stream("GET", "/agent/resume", params=resume) as response:
            kept = await collect(response)
        await asyncio.to_thread(postgres_server.start)

        async def stored_elsewhere() -> bool:
            return [t["status"] for t in await history(elsewhere, "c-lost")] == ["completed"]

        await eventually(stored_elsewhere)
        stored = await history(client, "c-lost")

    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert text_of(seen) == ANSWER
    assert [(e["type"], e.get("code"), e.get("status")) for e in seen[-3:]] == [
        ("thinking", None, None),
        ("error", "STORE_FAILED", None),
        ("complete", None, "failed"),
    ]
    assert seen[-3]["content"] == SAVING_NOTICE
    assert text_of(kept) == ANSWER
    assert kept[-1]["status"] == "failed"
    assert [(t["status"], t["answer"]) for t in stored] == [("completed", ANSWER)]
    assert len(errors) == 1
    assert "c-lost" in errors[0].getMessage()


async def _first_text(
    client: httpx.AsyncClient, conversation: str, seen: list[Event], begun: asyncio.Event
) -> None:
    """Read a whole stream into `seen`, setting `begun` at its first text."""
    params = {"query": "Go on", "conversationId": conversation}
    async with client.stream("GET", "/agent/chat/stream", params=params) as response:
        async for event in events(response):
            seen.append(event)
            if event["type"] == "text":
                begun.set()


async def _listed(client: httpx.AsyncClient) -> set[str]:
    runs = (await client.get("/agent/runs")).json()["data"]
    return {run["conversationId"] for run in runs if run["status"] == "running"}


HELD_PER_INSTANCE = 5
"""Turns each instance runs through the restart (a bounded batch), besides the one that ends."""


@pytest.mark.redis
async def test_claims_come_back_when_redis_restarts_empty_under_two_instances(
    tmp_path: Path,
    postgres_url: str,
    redis_server: RedisServer,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
) -> None:
    gate = asyncio.Event()
    held = {f"c-{owner}{n}": owner for owner in "ab" for n in range(HELD_PER_INSTANCE)}
    turns = {"c-ends": "a", **held}
    fake_llm.script(
        Reply.gated("The end ", "comes later.", gate),
        *(Reply.hang(first_text=f"Half of {conversation}") for conversation in held),
    )
    settings = [
        service_settings(
            tmp_path / name,
            postgres_url,
            redis_server.url,
            redis_prefix=redis_prefix,
            llm_base_url=fake_llm.base_url,
            streams_per_minute=0,
            max_streams_per_user=0,
        )
        for name in "ab"
    ]
    seen: dict[str, list[Event]] = {conversation: [] for conversation in turns}
    async with running_service(settings[0]) as on_a, running_service(settings[1]) as on_b:
        clients = {"a": on_a, "b": on_b}
        other = {"a": on_b, "b": on_a}
        streams = []
        for conversation, owner in turns.items():
            begun = asyncio.Event()
            streams.append(
                asyncio.create_task(
                    _first_text(clients[owner], conversation, seen[conversation], begun)
                )
            )
            await begun.wait()  # one at a time: each takes the next scripted reply
        await asyncio.to_thread(redis_server.kill)
        await asyncio.to_thread(redis_server.start)

        async def all_listed() -> bool:
            return await _listed(on_b) == set(turns)

        claims_back_after = await eventually(all_listed)
        # The other instance refuses a second message on each running conversation.
        busy = [
            (
                await other[owner].get(
                    "/agent/chat/stream", params={"query": "2", "conversationId": c}
                )
            ).status_code
            for c, owner in held.items()
        ]
        gate.set()
        await streams[0]
        resumed = await resume(on_b, "c-ends", 0)
        stops = [
            (await other[owner].get("/agent/stop", params={"conversationId": c})).json()["success"]
            for c, owner in held.items()
        ]
        await asyncio.gather(*streams)
        stored = {c: (await history(on_a, c))[0] for c in turns}

    assert claims_back_after < 5.0
    assert busy == [409] * len(held)
    assert stops == [True] * len(held)
    assert {c: seen[c][-1]["status"] for c in held} == dict.fromkeys(held, "stopped")
    assert {c: stored[c]["status"] for c in held} == dict.fromkeys(held, "stopped")
    assert {c: stored[c]["answer"] for c in held} == {c: f"Half of {c}" for c in held}
    assert seen["c-ends"][-1]["status"] == stored["c-ends"]["status"] == "completed"
    assert resumed[-1]["status"] == "completed"
    assert text_of(resumed) == "The end comes later." == stored["c-ends"]["answer"]
