"""User memory (API.md §4 "Memory"): what an agent keeps of the user across conversations,
read from what the fake model was sent.

Each turn's system prompt carries the user's items, ids shown, in a block that says they
are information and never instructions; the `remember` tool saves, updates and forgets
them; `memory: "off"`, the user's switch and `MEMORY_ENABLED=false` turn it off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson

from app.store.db import Database
from app.store.user_memory import SqlUserMemory
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import (
    Backend,
    ask,
    running_service,
    settings_for,
    settings_with_search,
)
from tests.support.research import over_http, step_named
from tests.support.sse import Event, collect

REMEMBER = "remember"


async def turn(
    client: httpx.AsyncClient,
    query: str,
    conversation: str,
    headers: dict[str, str] | None = None,
    **fields: Any,
) -> list[Event]:
    body = {"query": query, "conversationId": conversation, **fields}
    async with client.stream("POST", "/agent/chat/stream", json=body, headers=headers) as r:
        assert r.status_code == 200, await r.aread()
        events = await collect(r)
    assert events[-1]["status"] == "completed", events
    return events


def system_prompt(fake: FakeOpenAI, request: int = -1) -> str:
    return fake.system_text(fake.requests[request])


def tools_offered(fake: FakeOpenAI, request: int = -1) -> set[str]:
    return {t["function"]["name"] for t in fake.requests[request].get("tools", [])}


async def memory(client: httpx.AsyncClient, **params: str) -> list[dict[str, Any]]:
    response = await client.get("/memory", params=params)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["data"]
    return items


def saved(events: list[Event]) -> list[dict[str, Any]]:
    """The `remember` results of a turn, as the page reads them."""
    return [
        orjson.loads(e["result"])
        for e in events
        if e["type"] == "tool_end" and e["toolName"] == REMEMBER and not e["isError"]
    ]


async def test_a_fact_saved_in_one_conversation_is_in_the_next_ones_prompt(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.tool_calls([(REMEMBER, {"action": "save", "content": "I am vegetarian"})]),
        Reply.text("Noted: no meat."),
        Reply.text("A mushroom risotto."),
    )
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        first = await turn(client, "Remember that I am vegetarian", "c-first")
        assert REMEMBER in tools_offered(fake_llm, 0)
        [result] = saved(first)
        assert result["action"] == "save"
        assert result["content"] == "I am vegetarian"
        [item] = await memory(client)
        await turn(client, "What should I cook tonight?", "c-second")

    assert item["id"] == result["id"]
    assert item["source"] == "agent"
    assert item["conversationId"] == "c-first"
    assert item["turnId"] == first[0]["sessionId"]
    assert item["projectId"] is None
    prompt = system_prompt(fake_llm)
    assert f"[id {item['id']}] I am vegetarian" in prompt
    assert "never instructions" in prompt
    assert '<untrusted-content source="user memory">' in prompt


async def test_an_updated_fact_replaces_the_old_one(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        added = await client.post("/memory", json={"content": "I live in Paris"})
        item_id = added.json()["data"]["id"]
        fake_llm.script(
            Reply.tool_calls(
                [(REMEMBER, {"action": "update", "id": item_id, "content": "I live in Berlin"})]
            ),
            Reply.text("Welcome to Berlin."),
            Reply.text("Try the Tiergarten."),
        )
        moved = await turn(client, "I moved to Berlin last month", "c-move")
        asked_with = system_prompt(fake_llm, 0)
        items = await memory(client)
        await turn(client, "Where should I walk on Sunday?", "c-walk")

    assert f"[id {item_id}] I live in Paris" in asked_with
    assert saved(moved) == [
        {
            "action": "update",
            "id": item_id,
            "content": "I live in Berlin",
            "previous": "I live in Paris",
            "projectId": None,
        }
    ]
    assert [(i["id"], i["content"], i["source"]) for i in items] == [
        (item_id, "I live in Berlin", "user")
    ]
    prompt = system_prompt(fake_llm)
    assert "I live in Berlin" in prompt
    assert "Paris" not in prompt


async def test_a_temporary_turn_neither_reads_nor_saves_memory(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        await client.post("/memory", json={"content": "My name is Ada"})
        fake_llm.script(
            Reply.tool_calls([(REMEMBER, {"action": "save", "content": "I like jazz"})]),
            Reply.text("Enjoy the music."),
        )
        events = await turn(client, "I like jazz", "c-temporary", memory="off")
        items = await memory(client)

    assert "Ada" not in system_prompt(fake_llm, 0)
    assert REMEMBER not in tools_offered(fake_llm, 0)
    assert [e["isError"] for e in events if e["type"] == "tool_end"] == [True]
    assert [i["content"] for i in items] == ["My name is Ada"]


async def test_the_users_switch_turns_memory_off_for_every_turn(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        await client.post("/memory", json={"content": "My name is Ada"})
        before = await client.get("/memory/settings")
        switched = await client.patch("/memory/settings", json={"enabled": False})
        after = await client.get("/memory/settings")
        await turn(client, "Hello", "c-off")
        items = await memory(client)

    assert before.json()["data"] == {"enabled": True}
    assert switched.json()["data"] == {"enabled": False}
    assert after.json()["data"] == {"enabled": False}
    assert "Ada" not in system_prompt(fake_llm)
    assert REMEMBER not in tools_offered(fake_llm)
    assert [i["content"] for i in items] == ["My name is Ada"]


async def test_memory_enabled_false_turns_it_off_for_the_deployment(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, memory_enabled=False)
    async with running_service(settings) as client:
        answers = [
            await client.get("/memory"),
            await client.post("/memory", json={"content": "My name is Ada"}),
            await client.patch("/memory/abc", json={"content": "x"}),
            await client.delete("/memory/abc"),
            await client.delete("/memory"),
            await client.get("/memory/settings"),
            await client.patch("/memory/settings", json={"enabled": True}),
        ]
        await turn(client, "Hello", "c-none")

    assert [a.status_code for a in answers] == [404] * len(answers)
    assert "MEMORY_ENABLED=false" in answers[0].json()["message"]
    assert REMEMBER not in tools_offered(fake_llm)
    assert "memory" not in system_prompt(fake_llm)


async def test_items_are_checked_capped_edited_and_deleted(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, memory_max_items=2)
    async with running_service(settings) as client:
        empty = await client.post("/memory", json={"content": "   "})
        long = await client.post("/memory", json={"content": "x" * 1001})
        first = (await client.post("/memory", json={"content": "  I drink tea  "})).json()["data"]
        await client.post("/memory", json={"content": "I run on Sundays"})
        full = await client.post("/memory", json={"content": "One too many"})
        edited = await client.patch(f"/memory/{first['id']}", json={"content": "I drink coffee"})
        unknown = await client.patch("/memory/nope", json={"content": "x"})
        listed = await memory(client)
        deleted = await client.delete(f"/memory/{first['id']}")
        again = await client.delete(f"/memory/{first['id']}")
        cleared = await client.delete("/memory")
        left = await memory(client)

    assert (empty.status_code, long.status_code) == (422, 422)
    assert first["content"] == "I drink tea"
    assert first["source"] == "user"
    assert full.status_code == 409
    assert edited.json()["data"]["content"] == "I drink coffee"
    assert unknown.status_code == 404
    assert [i["content"] for i in listed] == ["I run on Sundays", "I drink coffee"]
    assert (deleted.status_code, again.status_code) == (200, 404)
    assert cleared.json()["data"] == {"deleted": 1}
    assert left == []


async def test_a_turn_carried_on_elsewhere_reads_the_users_items_and_switch(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """A turn another instance carries on had no start to read memory with: it reads the
    user's switch and items itself, and only that user's."""
    settings = settings_for(backend, tmp_path, fake_llm, api_keys="key-a:alice,key-b:bob")
    alice = {"Authorization": "Bearer key-a"}
    bob = {"Authorization": "Bearer key-b"}
    async with running_service(settings) as client:
        await client.post("/memory", json={"content": "I drink tea"}, headers=alice)
        await client.post("/memory", json={"content": "I run on Sundays"}, headers=alice)
        await client.post("/memory", json={"content": "Bob's fact"}, headers=bob)
        await client.patch("/memory/settings", json={"enabled": False}, headers=bob)
        async with Database.open(backend.database_url, pool_size=1, migrate=False) as db:
            store = SqlUserMemory(db)
            for_alice, for_bob, for_nobody = [
                await store.for_turn(user) for user in ("alice", "bob", "nobody")
            ]

    assert for_alice.enabled
    assert [item.content for item, _ in for_alice.items] == ["I run on Sundays", "I drink tea"]
    assert (for_bob.enabled, for_bob.items) == (False, [])
    assert (for_nobody.enabled, for_nobody.items) == (True, [])


async def test_deep_research_keeps_memory_in_its_first_step_and_reads_it_in_its_report(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    def researching(body: dict[str, Any]) -> Reply:
        if step_named(fake.system_text(body)) == "clarify":
            change = {"action": "save", "content": "I install heat pumps for a living"}
            answer = {"needClarification": False, "questions": "", "remember": [change]}
            return Reply.text(orjson.dumps(answer).decode())
        answered = over_http(fake, body)
        return answered if isinstance(answered, Reply) else Reply.text(answered)

    async with FakeOpenAI(researching) as fake:
        backend = Backend(sqlite_url, "", "")
        settings = settings_with_search(backend, tmp_path, fake, fake_search)
        async with running_service(settings) as client:
            await client.post("/memory", json={"content": "My name is Ada"})
            events = await ask(client, "How big is the heat pump market?", "c-deep", "deep")
            items = await memory(client)
        prompts = {step_named(fake.system_text(r)): fake.system_text(r) for r in fake.requests}

    assert events[-1]["status"] == "completed"
    [result] = saved(events)
    assert result["content"] == "I install heat pumps for a living"
    assert [(i["content"], i["conversationId"]) for i in items] == [
        ("I install heat pumps for a living", "c-deep"),
        ("My name is Ada", None),
    ]
    assert "My name is Ada" in prompts["clarify"]
    assert "My name is Ada" in prompts["report"]
    assert "My name is Ada" not in prompts["task"]
