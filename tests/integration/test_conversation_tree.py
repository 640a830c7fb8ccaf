"""A conversation you can correct: edits and regenerations branch it, one path is active.

Through the public API on both backends, with the fake model: what the
history shows (the active path, each turn's siblings), what the model is
given as memory (the path, never another branch: read off the requests the
fake received), switching branches and deleting one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, ask, history, running_service, settings_for
from tests.support.a2a import a2a_client, message
from tests.support.sse import Event, collect, events

ALICE = {"Authorization": "Bearer key-a"}
BOB = {"Authorization": "Bearer key-b"}


async def stream(client: httpx.AsyncClient, **params: Any) -> list[Event]:
    """One whole turn with the given stream fields (of Alice, keys on)."""
    async with client.stream("GET", "/agent/chat/stream", params=params, headers=ALICE) as r:
        assert r.status_code == 200, await r.aread()
        turn = await collect(r)
    assert turn[-1]["status"] == "completed"
    return turn


def questions_sent(fake: FakeOpenAI, since: int) -> set[str]:
    """The user messages of every model request since the `since`th: what the model remembered."""
    return {
        m["content"]
        for body in fake.requests[since:]
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], str)
    }


async def path(client: httpx.AsyncClient, conversation: str) -> list[tuple[str, int | None]]:
    response = await client.get(f"/session/{conversation}", headers=ALICE)
    assert response.status_code == 200
    return [(m["question"], m["parentId"]) for m in response.json()["data"]["messages"]]


@pytest.fixture
def settings(backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI) -> Any:
    return settings_for(backend, tmp_path, fake_llm, api_keys="key-a:alice,key-b:bob")


async def test_an_edit_and_a_regeneration_branch_and_memory_keeps_to_the_path(
    settings: Any, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings) as client:
        await stream(client, query="Q1", conversationId="c")
        await stream(client, query="Q2", conversationId="c")
        q1, q2 = (
            m["id"]
            for m in (await client.get("/session/c", headers=ALICE)).json()["data"]["messages"]
        )

        mark = len(fake_llm.requests)
        edit = await stream(client, query="Q2 edited", conversationId="c", parentId=str(q1))
        edit_memory = questions_sent(fake_llm, mark)
        mark = len(fake_llm.requests)
        await stream(client, query="Q3", conversationId="c")
        follow_memory = questions_sent(fake_llm, mark)
        after_edit = (await client.get("/session/c", headers=ALICE)).json()["data"]["messages"]

        mark = len(fake_llm.requests)
        edited = edit[0]["sessionId"]
        again = await stream(client, conversationId="c", regenerate=edited)
        regenerate_memory = questions_sent(fake_llm, mark)
        after_regenerate = (await client.get("/session/c", headers=ALICE)).json()["data"]

        mark = len(fake_llm.requests)
        await stream(client, query="Q1 again", conversationId="c", parentId=0)
        root_memory = questions_sent(fake_llm, mark)
        roots = (await client.get("/session/c", headers=ALICE)).json()["data"]["messages"]

    assert edit_memory == {"Q1", "Q2 edited"}
    assert follow_memory == {"Q1", "Q2 edited", "Q3"}
    assert [(m["question"], m["parentId"]) for m in after_edit] == [
        ("Q1", None),
        ("Q2 edited", q1),
        ("Q3", edited),
    ]
    assert [m["siblings"] for m in after_edit] == [[q1], [q2, edited], [after_edit[2]["id"]]]
    regenerated = again[0]["sessionId"]
    assert regenerate_memory == {"Q1", "Q2 edited"}
    assert [(m["id"], m["question"]) for m in after_regenerate["messages"]] == [
        (q1, "Q1"),
        (regenerated, "Q2 edited"),
    ]
    assert after_regenerate["messages"][1]["siblings"] == [q2, edited, regenerated]
    assert root_memory == {"Q1 again"}
    assert [m["question"] for m in roots] == ["Q1 again"]
    assert roots[0]["siblings"] == [q1, roots[0]["id"]]


async def test_switching_branches_sets_history_and_memory(
    settings: Any, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings) as client:
        first = await stream(client, query="Q1", conversationId="c")
        second = await stream(client, query="Q2", conversationId="c")
        await stream(client, query="Q3", conversationId="c")
        q1, q2 = first[0]["sessionId"], second[0]["sessionId"]
        await stream(client, query="Q2 edited", conversationId="c", parentId=q1)

        switched = await client.post("/session/c/active", json={"turnId": q2}, headers=ALICE)
        shown = await path(client, "c")
        mark = len(fake_llm.requests)
        await stream(client, query="Q4", conversationId="c")
        memory = questions_sent(fake_llm, mark)
        after = await path(client, "c")
        unknown = await client.post("/session/c/active", json={"turnId": 999_999}, headers=ALICE)
        too_big = await client.post("/session/c/active", json={"turnId": 2**63}, headers=ALICE)
        delete_too_big = await client.delete(f"/session/c/turns/{2**63}", headers=ALICE)
        not_bobs = await client.post("/session/c/active", json={"turnId": q2}, headers=BOB)

    assert switched.status_code == 200
    answered = [m["question"] for m in switched.json()["data"]["messages"]]
    assert answered == ["Q1", "Q2", "Q3"]  # through Q2, then the newest child at each step
    assert [q for q, _ in shown] == ["Q1", "Q2", "Q3"]
    assert memory == {"Q1", "Q2", "Q3", "Q4"}
    assert [q for q, _ in after] == ["Q1", "Q2", "Q3", "Q4"]
    assert unknown.status_code == 404
    assert (too_big.status_code, delete_too_big.status_code) == (422, 422)
    assert not_bobs.status_code == 404


async def test_a_bad_or_foreign_turn_is_refused_before_anything_is_stored(
    settings: Any, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings) as client:
        first = await stream(client, query="Q1", conversationId="c")
        turn = first[0]["sessionId"]
        refused = {
            name: await client.get(
                "/agent/chat/stream",
                params={"query": "Q", "conversationId": conversation, **fields},
                headers=headers,
            )
            for name, conversation, fields, headers in [
                ("not a number", "c", {"parentId": "first"}, ALICE),
                ("negative", "c", {"parentId": "-1"}, ALICE),
                ("past an int64", "c", {"parentId": "9" * 19}, ALICE),
                ("unknown", "c", {"parentId": "999999"}, ALICE),
                ("another conversation", "other", {"parentId": str(turn)}, ALICE),
                ("another user's", "c", {"parentId": str(turn)}, BOB),
                ("regenerate unknown", "c", {"regenerate": "999999"}, ALICE),
                ("regenerate not a number", "c", {"regenerate": "x"}, ALICE),
            ]
        }
        shown = await path(client, "c")

    assert {name: r.status_code for name, r in refused.items()} == {
        "not a number": 400,
        "negative": 400,
        "past an int64": 400,
        "unknown": 404,
        "another conversation": 404,
        "another user's": 404,
        "regenerate unknown": 404,
        "regenerate not a number": 400,
    }
    assert shown == [("Q1", None)]


async def test_deleting_a_turn_takes_its_branch_and_waits_for_a_running_one(
    settings: Any, fake_llm: FakeOpenAI
) -> None:
    gate = asyncio.Event()
    async with running_service(settings) as client:
        q1 = (await stream(client, query="Q1", conversationId="c"))[0]["sessionId"]
        q2 = (await stream(client, query="Q2", conversationId="c"))[0]["sessionId"]
        edited = (await stream(client, query="Q2 edited", conversationId="c", parentId=q1))[0]
        await stream(client, query="Q3 edited", conversationId="c")
        fake_llm.script(Reply.gated("Still", " going.", gate))
        params = {"query": "Q4 edited", "conversationId": "c"}
        async with client.stream(
            "GET", "/agent/chat/stream", params=params, headers=ALICE
        ) as running:
            live = events(running)
            async for event in live:
                if event["type"] == "text":
                    break
            busy = await client.delete(f"/session/c/turns/{edited['sessionId']}", headers=ALICE)
            gate.set()
            rest = [event async for event in live]
        deleted = await client.delete(f"/session/c/turns/{edited['sessionId']}", headers=ALICE)
        shown = await path(client, "c")
        again = await client.delete(f"/session/c/turns/{edited['sessionId']}", headers=ALICE)
        not_bobs = await client.delete(f"/session/c/turns/{q2}", headers=BOB)

    assert busy.status_code == 409
    assert rest[-1]["status"] == "completed"
    assert deleted.status_code == 200
    assert deleted.json()["data"] == {"conversationId": "c", "deleted": 3}
    # The active path ran through it: it moves to the newest remaining sibling.
    assert shown == [("Q1", None), ("Q2", q1)]
    assert again.status_code == 404
    assert not_bobs.status_code == 404


async def test_the_original_clients_history_is_a_plain_list(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        await ask(client, "Q1", "c")
        await ask(client, "Q2", "c")
        messages = await history(client, "c")

    assert [m["question"] for m in messages] == ["Q1", "Q2"]
    assert [m["parentId"] for m in messages] == [None, messages[0]["id"]]
    assert [m["siblings"] for m in messages] == [[messages[0]["id"]], [messages[1]["id"]]]


async def test_every_surface_places_its_turn_with_parent_id_and_regenerate(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        await ask(client, "Q1", "c")
        await ask(client, "Q2", "c")
        q1, q2 = (m["id"] for m in await history(client, "c"))
        run = {"runId": "r-1", "threadId": "c", "forwardedProps": {"parentId": q1}}
        user = {"id": "u-1", "role": "user", "content": "Q2 by AG-UI"}
        async with client.stream("POST", "/ag-ui/chat", json={**run, "messages": [user]}) as r:
            assert r.status_code == 200
            await r.aread()
        by_ag_ui = await history(client, "c")

        mark = len(fake_llm.requests)
        chat = {
            "id": "c",
            "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Q1"}]}],
            "trigger": "regenerate-message",
        }
        # `regenerate()` of the live answer: its message id is not a turn's, so the latest.
        async with client.stream("POST", "/ai-sdk/chat", json={**chat, "messageId": "x"}) as r:
            assert r.status_code == 200
            await r.aread()
        latest_again = await history(client, "c")
        regenerate_memory = questions_sent(fake_llm, mark)
        # A message loaded from the history has the turn's id.
        async with client.stream("POST", "/ai-sdk/chat", json={**chat, "messageId": str(q2)}) as r:
            assert r.status_code == 200
            await r.aread()
        by_ai_sdk = await history(client, "c")

        async with a2a_client(client) as a2a:
            sent = message("Q2 by A2A", "c", parentId=q1)
            [_ async for _ in a2a.send_message(sent)]
            by_a2a = await history(client, "c")
            again = message("", "c", regenerate=by_a2a[1]["id"])
            [_ async for _ in a2a.send_message(again)]
        last = await history(client, "c")

    assert [(m["question"], m["parentId"]) for m in by_ag_ui] == [("Q1", None), ("Q2 by AG-UI", q1)]
    assert [m["question"] for m in latest_again] == ["Q1", "Q2 by AG-UI"]
    assert latest_again[1]["siblings"] == [q2, by_ag_ui[1]["id"], latest_again[1]["id"]]
    assert regenerate_memory == {"Q1", "Q2 by AG-UI"}
    assert [m["question"] for m in by_ai_sdk] == ["Q1", "Q2"]
    assert by_ai_sdk[1]["id"] not in (q2, latest_again[1]["id"])
    assert [(m["question"], m["parentId"]) for m in by_a2a] == [("Q1", None), ("Q2 by A2A", q1)]
    assert [(m["question"], m["parentId"]) for m in last] == [("Q1", None), ("Q2 by A2A", q1)]
    assert last[1]["id"] != by_a2a[1]["id"]
    assert last[1]["siblings"][-2:] == [by_a2a[1]["id"], last[1]["id"]]


async def test_a_branched_conversation_keeps_its_title_and_exports_its_path_or_whole_tree(
    settings: Any,
) -> None:
    async with running_service(settings) as client:
        await stream(client, query="Q1", conversationId="c")
        await stream(client, query="Q2", conversationId="c")
        q1 = (await client.get("/session/c", headers=ALICE)).json()["data"]["messages"][0]["id"]
        await stream(client, query="Q2 edited", conversationId="c", parentId=str(q1))
        renamed = await client.patch("/session/c", json={"title": "Edits"}, headers=ALICE)
        detail = (await client.get("/session/c", headers=ALICE)).json()["data"]
        params = {"format": "markdown"}
        markdown = await client.get("/session/c/export", params=params, headers=ALICE)
        params = {"format": "json"}
        whole = await client.get("/session/c/export", params=params, headers=ALICE)

    assert renamed.status_code == 200
    assert detail["title"] == "Edits"
    assert [m["question"] for m in detail["messages"]] == ["Q1", "Q2 edited"]
    assert "Q2 edited" in markdown.text
    assert "\nQ2\n" not in markdown.text
    assert [m["question"] for m in whole.json()["messages"]] == ["Q1", "Q2", "Q2 edited"]
