"""Rating answers: a user's thumb up or down on a turn, with a comment, kept in the history;
admins read the verdicts back across users."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, ask, running_service, settings_for

KEYS = "key-alice:alice,key-bob:bob,key-root:root"


def as_(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer key-{user}"}


async def turn_ids(client: httpx.AsyncClient, user: str, conversation: str) -> list[int]:
    detail = (await client.get(f"/session/{conversation}", headers=as_(user))).json()["data"]
    return [m["id"] for m in detail["messages"]]


async def rate(
    client: httpx.AsyncClient, user: str, conversation: str, turn: int, **body: Any
) -> httpx.Response:
    url = f"/session/{conversation}/turns/{turn}/rating"
    return await client.put(url, json=body, headers=as_(user))


async def test_a_rating_is_kept_replaced_and_taken_back_without_moving_the_conversation(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Paris."), Reply.text("Berlin."))
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS)
    async with running_service(settings) as client:
        await ask(client, "Capital of France?", "c-old", headers=as_("alice"))
        await ask(client, "Capital of Germany?", "c-new", headers=as_("alice"))
        (turn,) = await turn_ids(client, "alice", "c-old")
        up = await rate(client, "alice", "c-old", turn, rating="up")
        down = await rate(
            client, "alice", "c-old", turn, rating="down", comment="  It is out of date.  "
        )
        listed = (await client.get("/session/list", headers=as_("alice"))).json()["data"]
        stored = (await client.get("/session/c-old", headers=as_("alice"))).json()["data"]
        refused = {
            "bob's turn": await rate(client, "bob", "c-old", turn, rating="up"),
            "no such turn": await rate(client, "alice", "c-old", turn + 100, rating="up"),
            "another conversation": await rate(client, "alice", "c-new", turn, rating="up"),
            "not a verdict": await rate(client, "alice", "c-old", turn, rating="meh"),
            "no verdict": await rate(client, "alice", "c-old", turn, comment="Hm."),
            "too long": await rate(client, "alice", "c-old", turn, rating="up", comment="x" * 2001),
        }
        kept = (await client.get("/session/c-old", headers=as_("alice"))).json()["data"]
        taken_back = await rate(client, "alice", "c-old", turn, rating=None, comment="Ignored")
        after = (await client.get("/session/c-old", headers=as_("alice"))).json()["data"]

    assert up.json()["data"] == {"turnId": turn, "rating": "up", "comment": None}
    assert down.json()["data"] == {
        "turnId": turn,
        "rating": "down",
        "comment": "It is out of date.",
    }
    message = stored["messages"][0]
    assert (message["rating"], message["ratingComment"]) == ("down", "It is out of date.")
    # Rating an older answer does not bring its conversation to the top.
    assert [r["conversationId"] for r in listed["records"]] == ["c-new", "c-old"]
    assert {name: r.status_code for name, r in refused.items()} == {
        "bob's turn": 404,
        "no such turn": 404,
        "another conversation": 404,
        "not a verdict": 422,
        "no verdict": 422,
        "too long": 422,
    }
    assert kept["messages"][0]["rating"] == "down"
    assert taken_back.json()["data"] == {"turnId": turn, "rating": None, "comment": None}
    assert (after["messages"][0]["rating"], after["messages"][0]["ratingComment"]) == (None, None)


async def test_an_admin_reads_every_users_ratings_and_the_dislikes_alone(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Paris."), Reply.text("Lyon."), Reply.text("Rome."))
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS, admin_users="root")
    async with running_service(settings) as client:
        await ask(client, "Capital of France?", "c-a1", headers=as_("alice"))
        await ask(client, "Capital of France, again?", "c-a2", headers=as_("alice"))
        await ask(client, "Capital of Italy?", "c-b", headers=as_("bob"))
        for user, conversation, verdict in (
            ("alice", "c-a1", {"rating": "up"}),
            ("alice", "c-a2", {"rating": "down", "comment": "Lyon is not the capital."}),
        ):
            (turn,) = await turn_ids(client, user, conversation)
            assert (await rate(client, user, conversation, turn, **verdict)).status_code == 200
        everything = await client.get("/admin/ratings", headers=as_("root"))
        dislikes = await client.get("/admin/ratings?rating=down", headers=as_("root"))
        alice_looks = await client.get("/admin/ratings", headers=as_("alice"))

    assert [(r["conversationId"], r["rating"]) for r in everything.json()["data"]] == [
        ("c-a2", "down"),
        ("c-a1", "up"),
    ]
    (disliked,) = dislikes.json()["data"]
    assert disliked["userId"] == "alice"
    assert (disliked["question"], disliked["answer"]) == ("Capital of France, again?", "Lyon.")
    assert disliked["comment"] == "Lyon is not the capital."
    assert (disliked["kind"], disliked["model"]) == ("chat", "default")
    assert alice_looks.status_code == 404
