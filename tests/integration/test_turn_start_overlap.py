"""A first question's answer starts while its row is written, and shows nothing before it is.

Each test asks once first (the app migrates, the model's connection opens), then holds the
question's INSERT back with a PostgreSQL lock of its own on the turns'
table (reads pass, writes wait), so the row's commit is as late as the test says.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Body, Reply
from tests.integration.service import ask, running_service, service_settings, stored_turns
from tests.support.sse import Event, events, types

pytestmark = pytest.mark.postgres

WAITING_INSERT = (
    "SELECT pid FROM pg_stat_activity"
    " WHERE wait_event_type = 'Lock' AND datname = current_database()"
    " AND (query LIKE 'WITH%' OR query LIKE 'INSERT%')"
)


@asynccontextmanager
async def turns_locked(database_url: str) -> AsyncIterator[AsyncConnection]:
    """A connection holding the turns' table against writes until the block ends."""
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("LOCK TABLE ai_session IN EXCLUSIVE MODE"))
            yield conn
    finally:
        await engine.dispose()


async def waiting_insert(conn: AsyncConnection) -> int:
    """The backend whose question INSERT waits on the lock, once it does (no event tells)."""
    for _ in range(500):
        pid = (await conn.execute(text(WAITING_INSERT))).scalar_one_or_none()
        if pid is not None:
            return int(pid)
        await asyncio.sleep(0.01)
    raise AssertionError("the question's INSERT never waited on the lock")


@asynccontextmanager
async def service_then(
    tmp_path: Path, postgres_url: str, fake: FakeOpenAI, reply: Reply
) -> AsyncIterator[tuple[httpx.AsyncClient, asyncio.Event]]:
    """The app, asked once (it migrates, the model's connection opens); then the fake answers
    `reply`, and the event is set as that request arrives."""
    settings = service_settings(tmp_path, postgres_url, llm_base_url=fake.base_url)
    async with running_service(settings) as client:
        await ask(client, "Warm up", "earlier")
        arrived = asyncio.Event()

        def responder(body: Body) -> Reply:
            arrived.set()
            return reply

        fake.responder = responder
        yield client, arrived


async def model_asked(arrived: asyncio.Event) -> None:
    async with asyncio.timeout(10):  # else a turn that asks only once stored hangs here
        await arrived.wait()


async def test_the_first_text_waits_for_the_questions_commit_the_model_asked_meanwhile(
    tmp_path: Path, postgres_url: str, fake_llm: FakeOpenAI
) -> None:
    reply = Reply.text("Stored before shown.")
    async with service_then(tmp_path, postgres_url, fake_llm, reply) as (client, arrived):
        seen: list[Event] = []

        async def read() -> None:
            params = {"query": "Hello", "conversationId": "overlap"}
            async with client.stream("GET", "/agent/chat/stream", params=params) as response:
                assert response.status_code == 200
                async for event in events(response):
                    seen.append(event)

        async with turns_locked(postgres_url) as lock:
            reading = asyncio.create_task(read())
            await model_asked(arrived)
            await waiting_insert(lock)
            # The model was asked while the row waits; the client has seen nothing yet.
            assert seen == []
        await reading

        # The notice that web search is not configured, then the model's answer.
        assert types(seen) == ["start", "thinking", "text", "complete"]
        assert seen[0]["sessionId"] > 0
        assert seen[-1]["status"] == "completed"
        assert await stored_turns(client, "overlap") == [("completed", "Stored before shown.")]


async def test_a_question_never_stored_cancels_the_model_call_and_answers_503(
    tmp_path: Path, postgres_url: str, fake_llm: FakeOpenAI
) -> None:
    reply = Reply.hang("Never shown.")
    async with service_then(tmp_path, postgres_url, fake_llm, reply) as (client, arrived):
        params = {"query": "Hello", "conversationId": "unstored"}
        async with turns_locked(postgres_url) as lock:
            answering = asyncio.create_task(client.get("/agent/chat/stream", params=params))
            await model_asked(arrived)
            # The question's connection dies before its row is committed.
            pid = await waiting_insert(lock)
            await lock.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            response: httpx.Response = await answering
        assert response.status_code == 503
        assert "database" in response.json()["message"]
        await fake_llm.disconnected.wait()
        assert (await client.get("/session/unstored")).status_code == 404


async def test_a_second_question_queued_behind_a_first_one_follows_it_not_beside_it(
    tmp_path: Path, postgres_url: str, fake_llm: FakeOpenAI
) -> None:
    reply = Reply.text("First answer.")
    async with service_then(tmp_path, postgres_url, fake_llm, reply) as (client, arrived):
        streams: dict[str, list[Event]] = {"First": [], "Second": []}
        queued = asyncio.Event()

        async def read(query: str, **more: str) -> None:
            params = {"query": query, "conversationId": "double", **more}
            async with client.stream("GET", "/agent/chat/stream", params=params) as response:
                assert response.status_code == 200
                async for event in events(response):
                    streams[query].append(event)
                    if event["type"] == "queued":
                        queued.set()

        async with turns_locked(postgres_url) as lock:
            first = asyncio.create_task(read("First"))
            await model_asked(arrived)
            await waiting_insert(lock)
            # The second reads the conversation empty too: the first's row is not written.
            second = asyncio.create_task(read("Second", multitaskStrategy="enqueue"))
            await queued.wait()
        await first
        await second

        assert types(streams["First"])[-1] == types(streams["Second"])[-1] == "complete"
        response = await client.get("/session/double")
        path = [(m["question"], m["parentId"]) for m in response.json()["data"]["messages"]]
        assert path == [("First", None), ("Second", streams["First"][0]["sessionId"])]
