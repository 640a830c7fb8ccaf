"""A second message while a turn runs (`multitaskStrategy`), and the caller's list of runs.

Each test runs on the embedded defaults and on PostgreSQL with Redis; the
first turn is held open by the fake model (a gate the test opens, or a call
that hangs until it is dropped), so what the second message meets is known.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.store.db import Database
from app.store.models import StoredTurn, TurnOutcome
from app.store.records import TurnStatus
from app.store.turns import SqlTurnStore
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, ask, history, running_service, settings_for
from tests.support.polling import eventually
from tests.support.sse import Event, events, text_of, types


async def runs(client: httpx.AsyncClient, headers: dict[str, str] | None = None) -> list[Any]:
    response = await client.get("/agent/runs", headers=headers)
    assert response.status_code == 200
    listed: list[Any] = response.json()["data"]
    return listed


async def until(stream: AsyncIterator[Event], kind: str) -> list[Event]:
    """Read `stream` up to and including the first event of `kind`."""
    seen: list[Event] = []
    async for event in stream:
        seen.append(event)
        if event["type"] == kind:
            return seen
    pytest.fail(f"the stream ended before a {kind} event")


def params(query: str, conversation: str, strategy: str = "", **more: str) -> dict[str, str]:
    """A stream's query string; with no `strategy`, the request leaves it out (the default)."""
    chosen = {"multitaskStrategy": strategy} if strategy else {}
    return {"query": query, "conversationId": conversation, **chosen, **more}


async def test_an_enqueued_message_waits_for_the_running_turn_then_streams(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    gate = asyncio.Event()
    fake_llm.script(Reply.gated("First", " answer.", gate), Reply.text("Second answer."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        first_params = params("One", "c-q", "reject")
        async with client.stream("GET", "/agent/chat/stream", params=first_params) as one:
            first = events(one)
            head = await until(first, "text")
            body = {"query": "Two", "conversationId": "c-q", "multitaskStrategy": "enqueue"}
            async with client.stream("POST", "/agent/chat/stream", json=body) as two:
                second = events(two)
                queued = await anext(second)
                unknown = await client.get(
                    "/agent/chat/stream", params=params("Three", "c-q", "sometimes")
                )
                listed = await runs(client)
                gate.set()
                first_rest = [e async for e in first]
                second_rest = [e async for e in second]
        stored = await history(client, "c-q")
        listed_after = await runs(client)

    assert queued == {"type": "queued", "conversationId": "c-q", "position": 1, "_id": 1}
    assert unknown.status_code == 422
    assert [(r["conversationId"], r["status"], r["question"]) for r in listed] == [
        ("c-q", "running", "One"),
        ("c-q", "queued", "Two"),
    ]
    assert listed[0]["lastEventId"] >= 2
    assert listed[1]["lastEventId"] is None
    assert types(head + first_rest) == ["start", "thinking", "text", "complete"]
    assert text_of(head + first_rest) == "First answer."
    assert types(second_rest) == ["start", "thinking", "text", "complete"]
    assert second_rest[0]["_id"] == 2
    assert second_rest[-1]["status"] == "completed"
    assert [(t["question"], t["status"], t["answer"]) for t in stored] == [
        ("One", "completed", "First answer."),
        ("Two", "completed", "Second answer."),
    ]
    # The queued turn started after the first was stored: its memory holds it.
    sent = [(m["role"], m["content"]) for m in fake_llm.requests[-1]["messages"]]
    assert ("assistant", "First answer.") in sent
    assert listed_after == []


async def test_a_stop_ends_the_running_turn_and_empties_the_queue(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial"), Reply.text("Never asked."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        async with client.stream("GET", "/agent/chat/stream", params=params("One", "c-s")) as one:
            first = events(one)
            head = await until(first, "text")
            queued_params = params("Two", "c-s", "enqueue")
            async with client.stream("GET", "/agent/chat/stream", params=queued_params) as two:
                second = events(two)
                queued = await anext(second)
                stopped = (await client.post("/agent/stop", json={"conversationId": "c-s"})).json()
                # A stop answers once the turn is stored, queue or not.
                right_after = await history(client, "c-s")
                second_rest = [e async for e in second]
            first_rest = [e async for e in first]
        stored = await history(client, "c-s")
        listed = await runs(client)
        after = await ask(client, "Three", "c-s")

    assert queued["type"] == "queued"
    assert stopped["success"] is True
    assert [t["status"] for t in right_after] == ["stopped"]
    assert types(second_rest) == ["complete"]
    assert second_rest[0]["status"] == "stopped"
    assert types(head + first_rest)[-1] == "complete"
    assert (head + first_rest)[-1]["status"] == "stopped"
    assert [(t["question"], t["status"]) for t in stored] == [("One", "stopped")]
    assert listed == []
    assert after[-1]["status"] == "completed"
    assert text_of(after) == "Never asked."


async def test_a_queued_client_that_leaves_with_cancel_leaves_the_queue(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    gate = asyncio.Event()
    fake_llm.script(Reply.gated("First", " answer.", gate), Reply.text("Not this one."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        async with client.stream("GET", "/agent/chat/stream", params=params("One", "c-l")) as one:
            first = events(one)
            await until(first, "text")
            leaving = params("Two", "c-l", "enqueue", onDisconnect="cancel")
            async with client.stream("GET", "/agent/chat/stream", params=leaving) as two:
                queued = await anext(events(two))

            async def queue_left() -> bool:
                return [r["status"] for r in await runs(client)] == ["running"]

            await eventually(queue_left)
            gate.set()
            rest = [e async for e in first]
        stored = await history(client, "c-l")

    assert queued["type"] == "queued"
    assert rest[-1]["status"] == "completed"
    assert [t["question"] for t in stored] == ["One"]
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_a_message_that_interrupts_stops_the_running_turn_and_runs_at_once(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, strategy: str
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial"), Reply.text("Fresh answer."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        async with client.stream("GET", "/agent/chat/stream", params=params("One", "c-i")) as one:
            first = events(one)
            head = await until(first, "text")
            second = await ask_with(client, params("Two", "c-i", strategy))
            first_rest = [e async for e in first]
        stored = await history(client, "c-i")

    assert (head + first_rest)[-1]["status"] == "stopped"
    assert types(second) == ["start", "thinking", "text", "complete"]
    assert second[-1]["status"] == "completed"
    sent = [(m["role"], m["content"]) for m in fake_llm.requests[-1]["messages"]]
    if strategy == "interrupt":
        assert [(t["question"], t["status"], t["answer"]) for t in stored] == [
            ("One", "stopped", "Partial"),
            ("Two", "completed", "Fresh answer."),
        ]
        assert ("assistant", "Partial") in sent
    else:
        assert [(t["question"], t["status"], t["answer"]) for t in stored] == [
            ("Two", "completed", "Fresh answer."),
        ]
        assert ("user", "One") not in sent


async def ask_with(client: httpx.AsyncClient, query: dict[str, str]) -> list[Event]:
    async with client.stream("GET", "/agent/chat/stream", params=query) as response:
        assert response.status_code == 200
        return [e async for e in events(response)]


async def test_reject_is_the_default_and_answers_409(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial"))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        async with client.stream("GET", "/agent/chat/stream", params=params("One", "c-r")) as one:
            await until(events(one), "text")
            plain = await client.get(
                "/agent/chat/stream", params={"query": "Two", "conversationId": "c-r"}
            )
            rejected = await client.get("/agent/chat/stream", params=params("Two", "c-r", "reject"))
            await client.get("/agent/stop", params={"conversationId": "c-r"})
        stored = await history(client, "c-r")

    assert plain.status_code == rejected.status_code == 409
    assert [t["question"] for t in stored] == ["One"]


async def test_a_request_its_checks_refuse_leaves_the_conversation_free(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """The conversation's claim is asked for while the request is checked: a refused request
    gives it back, so nothing is listed as running and the next question is answered."""
    fake_llm.script(Reply.text("Answered."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        no_file = await client.get("/agent/chat/stream", params=params("One", "c-f", fileId="nope"))
        no_model = await client.get("/agent/chat/stream", params=params("One", "c-f", model="nope"))
        listed = await runs(client)
        answered = await ask(client, "Two", "c-f")
        stored = await history(client, "c-f")

    assert (no_file.status_code, no_model.status_code) == (404, 400)
    assert listed == []
    assert text_of(answered) == "Answered."
    assert [t["question"] for t in stored] == ["Two"]


async def test_runs_lists_only_the_callers_turns_with_paused_ones_from_the_history(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial"))
    settings = settings_for(backend, tmp_path, fake_llm, api_keys="key-a:alice,key-b:bob")
    alice = {"Authorization": "Bearer key-a"}
    bob = {"Authorization": "Bearer key-b"}
    async with running_service(settings) as client:
        assert (await client.get("/health")).status_code == 200  # the app made its tables
        async with Database.open(backend.database_url, pool_size=1, migrate=False) as db:
            store = SqlTurnStore(db)
            turns: list[tuple[str, TurnStatus]] = [("Research it", "paused"), ("Done", "completed")]
            for question, status in turns:
                asked = StoredTurn(
                    session_id=f"c-{status}", user_id="alice", agent_type="deep", question=question
                )
                row = await store.add_question(asked)
                await store.finish_turn(row, TurnOutcome(answer="", thinking="", status=status))
        query = {"query": "Long one", "conversationId": "c-run"}
        async with client.stream("GET", "/agent/chat/stream", params=query, headers=alice) as one:
            await until(events(one), "text")
            for_alice = await runs(client, alice)
            for_bob = await runs(client, bob)
            await client.get("/agent/stop", params={"conversationId": "c-run"}, headers=alice)
        anonymous = await client.get("/agent/runs")

    assert [(r["kind"], r["conversationId"], r["status"], r["question"]) for r in for_alice] == [
        ("chat", "c-run", "running", "Long one"),
        ("deep", "c-paused", "paused", "Research it"),
    ]
    running, paused = for_alice
    assert running["lastEventId"] >= 2
    assert running["taskId"]
    assert running["startedAt"].endswith("Z")
    assert paused["sessionId"] > 0
    assert paused["taskId"] is None
    assert for_bob == []
    assert anonymous.status_code == 401


async def test_a_message_queued_through_the_ai_sdk_format_says_so_then_streams(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    gate = asyncio.Event()
    fake_llm.script(Reply.gated("First", " answer.", gate), Reply.text("Second answer."))
    body = {
        "id": "c-qa",
        "messages": [{"id": "m2", "role": "user", "parts": [{"type": "text", "text": "Two"}]}],
        "multitaskStrategy": "enqueue",
    }
    first_params = params("One", "c-qa")
    async with (
        running_service(settings_for(backend, tmp_path, fake_llm)) as client,
        client.stream("GET", "/agent/chat/stream", params=first_params) as one,
    ):
        first = events(one)
        await until(first, "text")
        async with client.stream("POST", "/ai-sdk/chat", json=body) as two:
            parts = aiter_data(two.aiter_lines())
            head = await anext(parts)
            gate.set()
            rest = [part async for part in parts]
        [e async for e in first]

    assert head == {
        "type": "data-queued",
        "data": {"conversationId": "c-qa", "position": 1},
        "transient": True,
    }
    assert rest[0]["type"] == "start"
    deltas = [p["delta"] for p in rest[:-1] if p["type"] == "text-delta"]
    assert "".join(deltas) == "Second answer."
    assert rest[-1] == "[DONE]"


async def aiter_data(lines: AsyncIterator[str]) -> AsyncIterator[Any]:
    """The `data:` payloads of an AI SDK stream: JSON parts, then the closing `[DONE]`."""
    async for line in lines:
        if line.startswith("data: "):
            payload = line.removeprefix("data: ")
            yield payload if payload == "[DONE]" else json.loads(payload)
