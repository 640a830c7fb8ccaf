"""Dependencies failing under a running service: Redis restarted, the database down.

Each test owns the server it breaks (a private redis-server or PostgreSQL
cluster on a free port) and never touches the shared ones.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import ask, history, resume, running_service, service_settings
from tests.support.logs import LogSignal, attached
from tests.support.poll import eventually
from tests.support.processes import PostgresServer, RedisServer
from tests.support.sse import Event, events, text_of

ANSWER = "The answer arrives in several parts."


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[PostgresServer]:
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
async def test_a_final_store_that_fails_is_retried_until_the_database_is_back(
    tmp_path: Path,
    postgres_server: PostgresServer,
    private_database: str,
    fake_llm: FakeOpenAI,
    store_retries: LogSignal,
) -> None:
    fake_llm.script(Reply.hang(first_text="Kept"))
    settings = service_settings(
        tmp_path, private_database, llm_base_url=fake_llm.base_url, store_retry_seconds=0.3
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

    assert seen[-1]["status"] == "stopped"
    assert [(t["status"], t["answer"]) for t in stored] == [("stopped", "Kept")]
    (retries,) = [
        sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "dodo_store_retries_total"
    ]
    assert retries >= 1


@pytest.mark.postgres
async def test_a_final_store_that_keeps_failing_is_logged_with_the_conversation(
    tmp_path: Path,
    postgres_server: PostgresServer,
    private_database: str,
    fake_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="app.agents.base")
    fake_llm.script(Reply.hang(first_text="Lost"))
    settings = service_settings(
        tmp_path, private_database, llm_base_url=fake_llm.base_url, store_retry_seconds=0.02
    )
    params = {"query": "Lose it", "conversationId": "c-lost"}
    async with running_service(settings) as client:

        async def outage() -> None:
            """The run ends (stopped) only once the database is down, so its store must fail."""
            await asyncio.to_thread(postgres_server.stop)
            await client.get("/agent/stop", params={"conversationId": "c-lost"})

        seen = await stream(client, params, outage)

    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert seen[-1]["status"] == "stopped"
    assert len(errors) == 1
    assert "c-lost" in errors[0].getMessage()
    assert "5 attempts" in errors[0].getMessage()


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
