"""Admins (`ADMIN_USERS`) see and stop every user's runs, read usage per user and set limits.

Everyone else finds no `/admin` at all (404), as with any path that is not there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.oidc_server import FakeIdentityProvider
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import (
    Backend,
    running_service,
    service_settings,
    settings_for,
)
from tests.support.sse import collect, events

KEYS = "key-alice:alice,key-bob:bob,key-root:root"


def as_(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer key-{user}"}


async def start_and_leave(client: httpx.AsyncClient, user: str, conversation: str) -> None:
    """Ask, read up to the first text, and go: the run goes on without the client."""
    params = {"query": "A long one", "conversationId": conversation}
    url = "/agent/chat/stream"
    async with client.stream("GET", url, params=params, headers=as_(user)) as r:
        async for event in events(r):
            if event["type"] == "text":
                return
    pytest.fail("the stream ended before any text")


async def ask(client: httpx.AsyncClient, user: str, conversation: str) -> httpx.Response:
    params = {"query": "Hi", "conversationId": conversation}
    async with client.stream("GET", "/agent/chat/stream", params=params, headers=as_(user)) as r:
        if r.status_code == 200:
            await collect(r)
        else:
            await r.aread()
        return r


async def test_an_admin_sees_every_users_runs_and_stops_one(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Alice's"), Reply.hang(first_text="Bob's"))
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS, admin_users="root")
    async with running_service(settings) as client:
        await start_and_leave(client, "alice", "c-alice")
        await start_and_leave(client, "bob", "c-bob")
        listed = (await client.get("/admin/runs", headers=as_("root"))).json()["data"]
        refused = [
            (await client.get(path, headers=as_("alice"))).status_code
            for path in ("/admin/runs", "/admin/usage", "/admin/users/bob/limits")
        ]
        alice_stops_bob = await client.post(
            "/admin/runs/stop",
            json={"userId": "bob", "conversationId": "c-bob"},
            headers=as_("alice"),
        )
        stopped = await client.post(
            "/admin/runs/stop",
            json={"userId": "alice", "conversationId": "c-alice"},
            headers=as_("root"),
        )
        left = (await client.get("/admin/runs", headers=as_("root"))).json()["data"]
        stored = await client.get("/session/c-alice", headers=as_("alice"))
        await client.post(
            "/admin/runs/stop",
            json={"userId": "bob", "conversationId": "c-bob"},
            headers=as_("root"),
        )

    assert [(r["userId"], r["conversationId"], r["status"]) for r in listed] == [
        ("alice", "c-alice", "running"),
        ("bob", "c-bob", "running"),
    ]
    assert refused == [404, 404, 404]
    assert alice_stops_bob.status_code == 404
    assert stopped.json() == {"success": True, "message": "The task was stopped"}
    assert [(r["userId"], r["conversationId"]) for r in left] == [("bob", "c-bob")]
    assert stored.json()["data"]["messages"][-1]["status"] == "stopped"


async def test_an_admin_reads_usage_per_user(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("One."), Reply.text("Two."), Reply.text("Three."))
    settings = settings_for(
        Backend(sqlite_url, "", ""), tmp_path, fake_llm, api_keys=KEYS, admin_users="root"
    )
    async with running_service(settings) as client:
        for user, conversation in (("alice", "a1"), ("alice", "a2"), ("bob", "b1")):
            assert (await ask(client, user, conversation)).status_code == 200
        usage = (await client.get("/admin/usage", headers=as_("root"))).json()["data"]

    turns = {u["userId"]: u["usage"]["total"]["turns"] for u in usage}
    assert turns == {"alice": 2, "bob": 1}
    assert usage[0]["usage"]["byKind"]["chat"]["turns"] == 2


async def test_limits_an_admin_sets_hold_for_that_user_only_until_cleared(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS, admin_users="root")
    async with running_service(settings) as client:
        put = await client.put(
            "/admin/users/alice/limits", json={"streamsPerMinute": 1}, headers=as_("root")
        )
        first = await ask(client, "alice", "a1")
        second = await ask(client, "alice", "a2")
        bob = [await ask(client, "bob", f"b{n}") for n in range(2)]
        cleared = await client.put(
            "/admin/users/alice/limits", json={"streamsPerMinute": None}, headers=as_("root")
        )
        bad = await client.put(
            "/admin/users/alice/limits", json={"streamsPerMinute": -1}, headers=as_("root")
        )

    assert put.json()["data"] == {
        "userId": "alice",
        "limits": {"maxStreamsPerUser": 8, "streamsPerMinute": 1, "uploadsPerMinute": 20},
        "overridden": {"maxStreamsPerUser": None, "streamsPerMinute": 1, "uploadsPerMinute": None},
    }
    assert (first.status_code, second.status_code) == (200, 429)
    assert second.json()["message"] == "Too many new streams: at most 1 a minute for one user"
    assert [r.status_code for r in bob] == [200, 200]
    assert cleared.json()["data"]["limits"]["streamsPerMinute"] == 30
    assert bad.status_code == 422


async def test_limits_an_admin_sets_reach_every_instance(
    tmp_path: Path, postgres_url: str, redis_url: str, redis_prefix: str, fake_llm: FakeOpenAI
) -> None:
    backend = Backend(postgres_url, redis_url, redis_prefix)
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS, admin_users="root")
    async with running_service(settings) as one:
        await one.put(
            "/admin/users/alice/limits", json={"streamsPerMinute": 1}, headers=as_("root")
        )
        # A second instance, started after the change, reads it from the database.
        async with running_service(settings) as two:
            first = await ask(two, "alice", "a1")
            second = await ask(one, "alice", "a2")
            read = await two.get("/admin/users/alice/limits", headers=as_("root"))

    assert (first.status_code, second.status_code) == (200, 429)
    assert read.json()["data"]["limits"]["streamsPerMinute"] == 1


async def test_an_oidc_group_makes_its_members_admins(tmp_path: Path, sqlite_url: str) -> None:
    provider = FakeIdentityProvider(audience="dodo", groups={"carol": ["ops", "staff"]})
    async with provider.running() as idp:
        settings = service_settings(
            tmp_path,
            sqlite_url,
            oidc_issuer=idp.issuer,
            oidc_audience="dodo",
            outbound_allowlist="127.0.0.1",
            admin_users="root,group:ops",
        )
        async with running_service(settings) as client:

            async def me(user: str) -> Any:
                headers = {"Authorization": f"Bearer {idp.mint(user)}"}
                return (await client.get("/auth/me", headers=headers)).json()["data"]

            carol, dave = await me("carol"), await me("dave")

    assert carol == {"userId": "carol", "admin": True}
    assert dave == {"userId": "dave", "admin": False}
