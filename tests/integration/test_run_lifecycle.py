"""How a run lives apart from its connection: disconnects, keep-alive, resume, cut-short tools.

Each test runs on the embedded defaults (SQLite, in-process tasks) and on
the production pair (PostgreSQL, Redis), against the real app on a socket.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.agents.tool_history import INTERRUPTED_RESULT
from app.api.auth import LOCAL_USER
from app.store.db import Database
from app.store.models import StoredTurn
from app.store.turns import SqlTurnStore
from app.tasks.redis.backend import redis_tasks
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import (
    Backend,
    ask,
    history,
    running_service,
    settings_for,
    settings_with_search,
)
from tests.support.polling import eventually
from tests.support.sse import collect, events


async def read_until_text(client: httpx.AsyncClient, params: dict[str, str]) -> int:
    """Ask, read up to the first text delta, then drop the connection; the last id seen."""
    async with client.stream("GET", "/agent/chat/stream", params=params) as response:
        async for event in events(response):
            if event["type"] == "text":
                last_id: int = event["_id"]
                return last_id
    pytest.fail("the stream ended before any text")


async def resume(client: httpx.AsyncClient, conversation: str, after: int) -> list[dict[str, Any]]:
    async with client.stream(
        "GET",
        "/agent/resume",
        params={"conversationId": conversation},
        headers={"Last-Event-ID": str(after)},
    ) as response:
        assert response.status_code == 200
        return await collect(response)


@pytest.mark.parametrize("where", ["request", "setting"])
async def test_on_disconnect_cancel_stops_a_run_whose_client_left(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, where: str
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial"))
    params = {"query": "Long one", "conversationId": "c-cancel"}
    overrides: dict[str, Any] = {}
    if where == "request":
        params["onDisconnect"] = "cancel"
    else:
        overrides["on_disconnect"] = "cancel"
    async with running_service(settings_for(backend, tmp_path, fake_llm, **overrides)) as client:
        seen = await read_until_text(client, params)
        # Its end is still readable: `complete` comes once the turn is stored.
        rest = await resume(client, "c-cancel", seen)
        stored = await history(client, "c-cancel")

    assert fake_llm.disconnected.is_set()
    assert rest[-1]["type"] == "complete"
    assert rest[-1]["status"] == "stopped"
    assert [(t["status"], t["answer"]) for t in stored] == [("stopped", "Partial")]


async def test_a_silent_run_sends_pings_to_keep_proxies_from_cutting_it(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_search.hang = True
    fake_llm.script(Reply.tool_calls([("web_search", {"query": "slow"})]))
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search, sse_ping_seconds=0.1)
    params = {"query": "Search slowly", "conversationId": "c-ping"}
    lines: list[str] = []
    async with (
        running_service(settings) as client,
        client.stream("GET", "/agent/chat/stream", params=params) as response,
    ):
        async for line in response.aiter_lines():
            lines.append(line)
            if lines.count(": ping") == 3:
                await client.get("/agent/stop", params={"conversationId": "c-ping"})
            if line.startswith("data: ") and '"complete"' in line:
                break

    tool_start = next(i for i, line in enumerate(lines) if '"tool_start"' in line)
    assert lines[tool_start:].count(": ping") >= 3


async def test_a_tool_call_cut_short_is_closed_in_the_turn_and_in_the_next_request(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_search.hang = True
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "never answered"})], text="Let me look."),
        Reply.text("Second answer."),
    )
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search)
    params = {"query": "First question", "conversationId": "c-cut"}
    async with running_service(settings) as client:
        async with client.stream("GET", "/agent/chat/stream", params=params) as response:
            async for event in events(response):
                if event["type"] == "tool_start":
                    call_id = event["toolCallId"]
                    await fake_search.started.wait()
                    await client.get("/agent/stop", params={"conversationId": "c-cut"})
        fake_search.hang = False
        second = await ask(client, "Second question", "c-cut")
        stored = await history(client, "c-cut")

    assert second[-1]["status"] == "completed"
    assert stored[0]["status"] == "stopped"
    assert stored[0]["answer"] == "Let me look."
    assert stored[0]["tools"] == [
        {
            "id": call_id,
            "name": "web_search",
            "arguments": '{"query":"never answered"}',
            "result": INTERRUPTED_RESULT,
            "isError": True,
        }
    ]
    # Every tool call the next request replays has its result right after it.
    sent = fake_llm.requests[-1]["messages"][1:]
    assert sent == [
        {"role": "user", "content": "First question"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": "web_search",
                        "arguments": '{"query":"never answered"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_RESULT},
        {"role": "assistant", "content": "Let me look."},
        {"role": "user", "content": "Second question"},
    ]


async def test_a_running_turn_is_saved_every_few_seconds(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Saved while running"))
    settings = settings_for(backend, tmp_path, fake_llm, partial_save_seconds=0.1)
    params = {"query": "Long one", "conversationId": "c-partial"}
    async with running_service(settings) as client:
        await read_until_text(client, params)
        running: list[dict[str, Any]] = []

        async def saved() -> bool:
            running[:] = await history(client, "c-partial")
            return bool(running[0]["answer"])

        await eventually(saved, what="the running turn's answer saved")
        await client.get("/agent/stop", params={"conversationId": "c-partial"})
        stopped = await history(client, "c-partial")

    assert (running[0]["status"], running[0]["answer"]) == ("running", "Saved while running")
    assert (stopped[0]["status"], stopped[0]["answer"]) == ("stopped", "Saved while running")


async def test_resume_says_what_it_cannot_do(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        unknown = await client.get("/agent/resume", params={"conversationId": "c-none"})
        await ask(client, "Hello", "c-done")
        bad_id = await client.get(
            "/agent/resume", params={"conversationId": "c-done", "lastEventId": "x"}
        )
        finished = await resume(client, "c-done", 0)
        at_end = await resume(client, "c-done", finished[-1]["_id"])

    assert unknown.status_code == 404
    assert unknown.json()["code"] == 404
    assert bad_id.status_code == 400
    assert finished[-1]["type"] == "complete"
    assert at_end == []


async def store_running_turn(database_url: str, instance_id: str, conversation: str) -> None:
    """A turn stored `running` by another process, as the question's insert leaves it."""
    async with Database.open(database_url, pool_size=1, migrate=True) as db:
        turn = StoredTurn(
            session_id=conversation, user_id=LOCAL_USER, agent_type="chat", question="Left?"
        )
        await SqlTurnStore(db, instance_id).add_question(turn)


async def test_a_turn_a_dead_process_left_running_ends_interrupted_once_the_service_runs(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    await store_running_turn(backend.database_url, "gone-1", "c-orphan")
    settings = settings_for(backend, tmp_path, fake_llm, instance_dead_seconds=0.5)
    async with running_service(settings) as client:

        async def interrupted() -> bool:
            return bool((await history(client, "c-orphan"))[0]["status"] == "interrupted")

        # At start-up on one instance; within the dead instance's grace with Redis.
        took = await eventually(interrupted)

    assert took < 0.5 + 2.0


@pytest.mark.postgres
@pytest.mark.redis
async def test_an_instance_starting_with_a_short_ttl_leaves_a_live_instances_turn_running(
    postgres_url: str, redis_url: str, redis_prefix: str, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    live = redis_tasks(redis_url, redis_prefix, "alive-2", dead_after=30.0)

    async def no_stops(user_id: str, conversation_id: str) -> bool:
        return False

    await live.backend.start(no_stops)
    try:
        await store_running_turn(postgres_url, "alive-2", "c-live")
        backend = Backend(postgres_url, redis_url, redis_prefix)
        # Far shorter than the live instance's deadline, and than the time its turn has run.
        settings = settings_for(
            backend, tmp_path, fake_llm, task_ttl_seconds=1, instance_dead_seconds=0.2
        )
        await asyncio.sleep(1.1)
        async with running_service(settings) as client:
            # Five of the new instance's own lifetimes: its sweep ran over and over.
            await asyncio.sleep(1.0)
            stored = await history(client, "c-live")
    finally:
        await live.backend.close()

    assert stored[0]["status"] == "running"
