"""Double texting across two instances sharing Redis and PostgreSQL: a queue on one
instance waits for a turn on the other, an interrupt stops it there, a stop empties it."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import history
from tests.integration.test_double_texting import params, runs, until
from tests.integration.test_instances import Instances, instances  # noqa: F401 (fixture)
from tests.support.sse import events, text_of, types

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


async def test_a_message_queued_on_one_instance_runs_when_the_other_ends_its_turn(
    instances: Instances,  # noqa: F811
    fake_llm: FakeOpenAI,
) -> None:
    on_a, on_b = await instances.start()
    gate = asyncio.Event()
    fake_llm.script(Reply.gated("First", " answer.", gate), Reply.text("Second answer."))
    async with on_a.stream("GET", "/agent/chat/stream", params=params("One", "c-x")) as one:
        first = events(one)
        await until(first, "text")
        queued_params = params("Two", "c-x", "enqueue")
        async with on_b.stream("GET", "/agent/chat/stream", params=queued_params) as two:
            second = events(two)
            queued = await anext(second)
            listed_on_a = await runs(on_a)
            listed_on_b = await runs(on_b)
            gate.set()
            first_rest = [e async for e in first]
            second_rest = [e async for e in second]
    stored = await history(on_a, "c-x")

    assert queued["type"] == "queued"
    assert queued["position"] == 1
    assert [(r["status"], r["question"]) for r in listed_on_a] == [
        ("running", "One"),
        ("queued", "Two"),
    ]
    assert listed_on_b == listed_on_a
    assert first_rest[-1]["status"] == "completed"
    assert types(second_rest) == ["start", "text", "complete"]
    assert text_of(second_rest) == "Second answer."
    assert [(t["question"], t["status"]) for t in stored] == [
        ("One", "completed"),
        ("Two", "completed"),
    ]


async def test_an_interrupt_sent_to_the_other_instance_stops_the_turn_and_takes_its_place(
    instances: Instances,  # noqa: F811
    fake_llm: FakeOpenAI,
) -> None:
    on_a, on_b = await instances.start()
    fake_llm.script(Reply.hang(first_text="Partial"), Reply.text("Fresh answer."))
    async with on_a.stream("GET", "/agent/chat/stream", params=params("One", "c-y")) as one:
        first = events(one)
        await until(first, "text")
        query = params("Two", "c-y", "interrupt")
        async with on_b.stream("GET", "/agent/chat/stream", params=query) as two:
            assert two.status_code == 200
            second = [e async for e in events(two)]
        first_rest = [e async for e in first]
    stored = await history(on_b, "c-y")

    assert first_rest[-1]["status"] == "stopped"
    assert second[-1]["status"] == "completed"
    assert [(t["question"], t["status"], t["answer"]) for t in stored] == [
        ("One", "stopped", "Partial"),
        ("Two", "completed", "Fresh answer."),
    ]


async def test_a_stop_on_one_instance_ends_a_message_queued_on_the_other(
    instances: Instances,  # noqa: F811
    fake_llm: FakeOpenAI,
) -> None:
    on_a, on_b = await instances.start()
    fake_llm.script(Reply.hang(first_text="Partial"), Reply.text("Never asked."))
    async with on_a.stream("GET", "/agent/chat/stream", params=params("One", "c-z")) as one:
        first = events(one)
        await until(first, "text")
        queued_params = params("Two", "c-z", "enqueue")
        async with on_b.stream("GET", "/agent/chat/stream", params=queued_params) as two:
            second = events(two)
            await anext(second)
            stopped = (await on_a.get("/agent/stop", params={"conversationId": "c-z"})).json()
            second_rest = [e async for e in second]
        first_rest = [e async for e in first]
    stored = await history(on_b, "c-z")

    assert stopped["success"] is True
    assert [(e["type"], e.get("status")) for e in second_rest] == [("complete", "stopped")]
    assert first_rest[-1]["status"] == "stopped"
    assert [t["question"] for t in stored] == ["One"]
    assert len(fake_llm.requests) == 1


async def test_the_other_instance_lists_each_running_turn_with_its_newest_event(
    instances: Instances,  # noqa: F811
    fake_llm: FakeOpenAI,
) -> None:
    on_a, on_b = await instances.start()
    fake_llm.script(Reply.hang(first_text="First"), Reply.hang(first_text="Second"))
    async with (
        on_a.stream("GET", "/agent/chat/stream", params=params("One", "c-1")) as one,
        on_a.stream("GET", "/agent/chat/stream", params=params("Two", "c-2")) as two,
    ):
        texts = [(await until(events(one), "text"))[-1], (await until(events(two), "text"))[-1]]
        for conversation, text in zip(("c-1", "c-2"), texts, strict=True):
            await seen_on(on_b, conversation, text["_id"])  # so Redis's copy holds it
        listed_on_b = await runs(on_b)
        for conversation in ("c-1", "c-2"):
            await on_b.get("/agent/stop", params={"conversationId": conversation})

    assert [(r["conversationId"], r["status"]) for r in listed_on_b] == [
        ("c-1", "running"),
        ("c-2", "running"),
    ]
    assert [r["lastEventId"] for r in listed_on_b] == [text["_id"] for text in texts]


async def seen_on(client: httpx.AsyncClient, conversation: str, event_id: int) -> None:
    """Return once `client`'s instance can replay event `event_id` of the conversation's run."""
    query = {"conversationId": conversation, "lastEventId": str(event_id - 1)}
    async with client.stream("GET", "/agent/resume", params=query) as response:
        event = await anext(events(response))
    assert event["_id"] == event_id
