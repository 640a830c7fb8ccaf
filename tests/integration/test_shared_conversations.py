"""Sharing a conversation by link: anyone holding it reads the questions, answers and
sources up to the shared turn, without signing in; the owner moves or stops the link."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, ask, running_service, settings_for

KEYS = "key-alice:alice,key-bob:bob"
ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


async def read(client: httpx.AsyncClient, token: str) -> httpx.Response:
    """As a stranger would: no key at all."""
    return await client.get(f"/shared/{token}")


async def test_a_shared_conversation_is_read_without_signing_in_up_to_the_shared_turn(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, access_log: Callable[[], io.StringIO]
) -> None:
    fake_llm.script(
        Reply.text("Paris [1].", reasoning="Private musing."),
        Reply.text("About 2 million."),
        Reply.text("Not shared yet."),
    )
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS)
    async with running_service(settings) as client:
        await ask(client, "Capital of France?", "c1", headers=ALICE)
        await ask(client, "How many people live there?", "c1", headers=ALICE)
        made = (await client.post("/session/c1/share", headers=ALICE)).json()["data"]
        token = made["token"]
        written = access_log()
        first_read = await read(client, token)
        await ask(client, "And Lyon?", "c1", headers=ALICE)
        after_more = await read(client, token)
        listed = (await client.get("/session/list", headers=ALICE)).json()["data"]["records"]
        again = (await client.post("/session/c1/share", headers=ALICE)).json()["data"]
        moved = await read(client, token)
        looked_up = await client.get("/session/c1/share", headers=ALICE)
        refused = {
            "bob shares alice's": await client.post("/session/c1/share", headers=BOB),
            "bob unshares alice's": await client.delete("/session/c1/share", headers=BOB),
            "no key": await client.post("/session/c1/share"),
            "no such link": await read(client, "A" * 22),
            "not a token": await read(client, "short"),
        }
        stopped = await client.delete("/session/c1/share", headers=ALICE)
        after_stop = await read(client, token)
        not_shared = await client.get("/session/c1/share", headers=ALICE)

    view: dict[str, Any] = first_read.json()["data"]
    assert first_read.status_code == 200
    assert view["title"] == "Capital of France?"
    assert [(m["question"], m["answer"]) for m in view["messages"]] == [
        ("Capital of France?", "Paris [1]."),
        ("How many people live there?", "About 2 million."),
    ]
    # Only what a stranger may read: no thinking, tools, files, ids or owner.
    assert set(view["messages"][0]) == {"question", "answer", "reference", "createTime"}
    assert "Private musing" not in first_read.text
    assert "alice" not in first_read.text
    # The link shows the conversation as it was shared, until it is shared again.
    assert [m["question"] for m in after_more.json()["data"]["messages"]][-1] == (
        "How many people live there?"
    )
    assert [r["shared"] for r in listed] == [True]
    assert again["token"] == token
    assert again["turnId"] > made["turnId"]
    assert made["path"] == f"/#s={token}"
    assert moved.json()["data"]["messages"][-1]["answer"] == "Not shared yet."
    assert looked_up.json()["data"]["token"] == token
    assert {name: r.status_code for name, r in refused.items()} == {
        "bob shares alice's": 404,
        "bob unshares alice's": 404,
        "no key": 401,
        "no such link": 404,
        "not a token": 422,
    }
    assert stopped.status_code == 200
    assert (after_stop.status_code, not_shared.status_code) == (404, 404)
    # The token is the link's secret: the access log never writes it.
    assert '"GET /shared/… HTTP/1.1" 200' in written.getvalue()
    assert token not in written.getvalue()


async def test_deleting_the_conversation_or_the_shared_turn_ends_the_link(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("One."), Reply.text("Two."), Reply.text("Three."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        await ask(client, "First?", "gone")
        await ask(client, "First?", "pruned")
        await ask(client, "Second?", "pruned")
        gone = (await client.post("/session/gone/share")).json()["data"]["token"]
        pruned = (await client.post("/session/pruned/share")).json()["data"]
        await client.delete("/session/gone")
        await client.delete(f"/session/pruned/turns/{pruned['turnId']}")
        answers = [await read(client, gone), await read(client, pruned["token"])]
        await ask(client, "First?", "gone")
        fresh = await client.get("/session/gone/share")

    assert [r.status_code for r in answers] == [404, 404]
    # The conversation begun again under the same id is not shared.
    assert fresh.status_code == 404
