"""Renaming and pinning a conversation (API.md §4): the title the list and the history show,
and the pinned conversations first in the list.

Through the HTTP app with the fake model, on SQLite and on PostgreSQL with Redis.
A conversation never renamed is titled by its first question, cut to 100
characters; a rename or a pin is the caller's alone, and goes with the conversation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, ask, ask_with, running_service, settings_for

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
LONG_QUESTION = "Why " + "very " * 40 + "long?"


async def titles(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, str]:
    listing = await client.get("/session/list", headers=headers)
    assert listing.status_code == 200
    records: list[dict[str, Any]] = listing.json()["data"]["records"]
    return {r["conversationId"]: r["title"] for r in records}


async def test_a_conversation_is_titled_by_its_first_question_until_renamed(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("One."), Reply.text("Two."), Reply.text("Three."))
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        await ask(client, LONG_QUESTION, "long")
        await ask(client, "What is SSE?", "short")
        await ask(client, "And WebSockets?", "short")
        before = await titles(client, {})
        renamed = await client.patch("/session/short", json={"title": "  Streams, compared  "})
        after = await titles(client, {})
        detail = (await client.get("/session/short")).json()["data"]
        unrenamed = (await client.get("/session/long")).json()["data"]

    assert before == {"long": LONG_QUESTION[:100], "short": "What is SSE?"}
    assert len(before["long"]) == 100
    assert renamed.status_code == 200
    assert renamed.json()["data"] == {
        "conversationId": "short",
        "title": "Streams, compared",
        "pinned": False,
        "projectId": None,
    }
    assert after == {"long": LONG_QUESTION[:100], "short": "Streams, compared"}
    assert detail["title"] == "Streams, compared"
    assert unrenamed["title"] == LONG_QUESTION[:100]


async def test_a_title_is_one_to_two_hundred_characters_after_trimming(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        await ask(client, "What is SSE?", "c1")
        refused = {
            label: await client.patch("/session/c1", json=body)
            for label, body in {
                "blank": {"title": "   "},
                "empty": {"title": ""},
                "too long": {"title": "x" * 201},
                "missing": {},
                "not text": {"title": 7},
            }.items()
        }
        longest = await client.patch("/session/c1", json={"title": f" {'é' * 200} "})
        stored = (await client.get("/session/c1")).json()["data"]["title"]

    assert {label: r.status_code for label, r in refused.items()} == dict.fromkeys(refused, 422)
    assert all(r.json()["code"] == 422 for r in refused.values())
    assert longest.status_code == 200
    assert stored == "é" * 200


async def test_only_the_owner_renames_and_a_deleted_conversation_takes_its_title(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, api_keys="key-alice:alice,key-bob:bob")
    async with running_service(settings) as client:
        await ask(client, "Alice's question", "shared-id", headers=ALICE)
        await ask(client, "Bob's question", "shared-id", headers=BOB)
        await ask(client, "Bob only", "bobs", headers=BOB)
        bobs_by_alice = await client.patch("/session/bobs", json={"title": "x"}, headers=ALICE)
        by_bob = await client.patch("/session/shared-id", json={"title": "Bob's"}, headers=BOB)
        unknown = await client.patch("/session/nope", json={"title": "x"}, headers=ALICE)
        alice_titles = await titles(client, ALICE)
        await client.delete("/session/shared-id", headers=BOB)
        await ask(client, "A fresh start", "shared-id", headers=BOB)
        bob_titles = await titles(client, BOB)

    assert by_bob.status_code == 200
    assert (unknown.status_code, unknown.json()["code"]) == (404, 404)
    assert bobs_by_alice.status_code == 404
    # Bob's rename is of his own conversation of that id: Alice's keeps its title.
    assert alice_titles == {"shared-id": "Alice's question"}
    # Deleted with the conversation: the same id begun again is titled afresh.
    assert bob_titles == {"shared-id": "A fresh start", "bobs": "Bob only"}


async def listing(client: httpx.AsyncClient) -> list[tuple[str, str, bool]]:
    records = (await client.get("/session/list")).json()["data"]["records"]
    return [(r["conversationId"], r["title"], r["pinned"]) for r in records]


async def test_a_pinned_conversation_leads_the_list_until_unpinned_and_keeps_its_title(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("One."), Reply.text("Two."), Reply.text("Three."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        for conversation in ("oldest", "older", "newest"):
            await ask(client, f"The {conversation} question", conversation)
        pinned = await client.patch("/session/oldest", json={"pinned": True})
        await client.patch("/session/older", json={"pinned": True, "title": "Kept"})
        pinned_list = await listing(client)
        renamed = await client.patch("/session/oldest", json={"title": "Still pinned"})
        detail = (await client.get("/session/oldest")).json()["data"]
        unpinned = await client.patch("/session/older", json={"pinned": False})
        after = await listing(client)
        refused = await client.patch("/session/oldest", json={"pinned": "yes"})

    assert pinned.json()["data"] == {
        "conversationId": "oldest",
        "title": None,
        "pinned": True,
        "projectId": None,
    }
    # Pinned first, each group newest first; a pin alone leaves the title to the question.
    assert pinned_list == [
        ("older", "Kept", True),
        ("oldest", "The oldest question", True),
        ("newest", "The newest question", False),
    ]
    assert renamed.json()["data"] == {
        "conversationId": "oldest",
        "title": "Still pinned",
        "pinned": True,
        "projectId": None,
    }
    assert (detail["title"], detail["pinned"]) == ("Still pinned", True)
    assert unpinned.json()["data"] == {
        "conversationId": "older",
        "title": "Kept",
        "pinned": False,
        "projectId": None,
    }
    assert after == [
        ("oldest", "Still pinned", True),
        ("newest", "The newest question", False),
        ("older", "Kept", False),
    ]
    assert refused.status_code == 422


async def test_an_edited_first_question_titles_the_conversation_until_renamed(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        [start, *_] = await ask(client, "What is SSE?", "c")
        await ask(client, "And WebSockets?", "c")
        await ask_with(client, "c", query="What are server-sent events?", parentId=0)
        edited = await named(client, "c", "server-sent")
        await client.post("/session/c/active", json={"turnId": start["sessionId"]})
        switched_back = await named(client, "c", "What")
        await ask_with(client, "c", query="What are server-sent events?", parentId=0)
        await client.patch("/session/c", json={"title": "Mine"})
        renamed = await named(client, "c", "server-sent")

    # The list (its title and its first question), the history and a search say the same.
    assert edited == ["What are server-sent events?"] * 4
    assert switched_back == ["What is SSE?"] * 4
    assert renamed == ["Mine", "What are server-sent events?", "Mine", "Mine"]


async def named(client: httpx.AsyncClient, conversation: str, words: str) -> list[str]:
    """What names the conversation: in the list (its title, then its `question`), in its
    history, and in a search hit of `words`."""
    [record] = (await client.get("/session/list")).json()["data"]["records"]
    detail = (await client.get(f"/session/{conversation}")).json()["data"]
    hits = (await client.get("/session/search", params={"q": words})).json()["data"]
    return [record["title"], record["question"], detail["title"], hits["records"][0]["title"]]
