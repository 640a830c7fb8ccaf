"""Keys users make, list and revoke themselves, usable wherever an API_KEYS key is."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, ask, running_service, settings_for

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
KEYS = "key-alice:alice,key-bob:bob"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def make(
    client: httpx.AsyncClient, headers: dict[str, str], **body: object
) -> httpx.Response:
    return await client.post("/auth/keys", json=body, headers=headers)


async def test_a_made_key_is_shown_once_listed_by_prefix_and_works_until_revoked(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Made with a script."))
    async with running_service(settings_for(backend, tmp_path, fake_llm, api_keys=KEYS)) as client:
        made = (await make(client, ALICE, name="nightly report")).json()["data"]
        key = made["key"]
        events = await ask(client, "Hi", "conv-script", headers=bearer(key))
        history = await client.get("/session/list", headers=ALICE)
        streamed_by_query = await client.get("/file/list", params={"access_token": key})
        a2a = await client.post(
            "/a2a",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "ListTasks",
                "params": {"contextId": "conv-script"},
            },
            headers={**bearer(key), "A2A-Version": "1.0"},
        )
        listed = (await client.get("/auth/keys", headers=ALICE)).json()["data"]
        bobs = (await client.get("/auth/keys", headers=BOB)).json()["data"]
        bob_revokes = await client.delete(f"/auth/keys/{made['id']}", headers=BOB)
        revoked = await client.delete(f"/auth/keys/{made['id']}", headers=bearer(key))
        after = await client.get("/session/list", headers=bearer(key))
        again = await client.delete(f"/auth/keys/{made['id']}", headers=ALICE)

    assert key.startswith("dk_")
    assert len(key) > 40
    assert made["prefix"] == key[:10]
    assert made["name"] == "nightly report"
    assert made["expiresAt"] is None
    assert made["lastUsedAt"] is None
    assert events[-1]["status"] == "completed"
    assert [r["conversationId"] for r in history.json()["data"]["records"]] == ["conv-script"]
    assert streamed_by_query.status_code == 200
    assert len(a2a.json()["result"]["tasks"]) == 1
    assert [(k["id"], k["prefix"]) for k in listed] == [(made["id"], key[:10])]
    assert "key" not in listed[0]
    assert listed[0]["lastUsedAt"] is not None
    assert bobs == []
    assert bob_revokes.status_code == 404
    assert revoked.status_code == 200
    assert (after.status_code, after.headers["www-authenticate"]) == (
        401,
        'Bearer error="invalid_token"',
    )
    assert again.status_code == 404


async def test_an_expired_key_lets_no_one_in(tmp_path: Path, sqlite_url: str) -> None:
    backend = Backend(sqlite_url, "", "")
    settings = settings_for(backend, tmp_path, FakeOpenAI(), api_keys=KEYS)
    async with running_service(settings) as client:
        later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        made = (await make(client, ALICE, expiresAt=later)).json()["data"]
        past = await make(client, ALICE, expiresAt="2020-01-01T00:00:00Z")
        naive = await make(client, ALICE, expiresAt="2999-01-01T00:00:00")
        # Its hour passed: set in the database, where a test cannot wait it out (a key made
        # to expire a second later failed when the machine stalled before it was made).
        with sqlite3.connect(sqlite_url.split(":///", 1)[1]) as database:
            database.execute(
                "UPDATE auth_key SET expires_at = created_at WHERE id = ?", (made["id"],)
            )
        expired = await client.get("/session/list", headers=bearer(made["key"]))

    assert made["expiresAt"] is not None
    assert (past.status_code, naive.status_code) == (422, 422)
    assert expired.status_code == 401


async def test_keys_need_authentication_on(tmp_path: Path, sqlite_url: str) -> None:
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, FakeOpenAI())
    async with running_service(settings) as client:
        refused = await make(client, {})
        me = await client.get("/auth/me")

    assert refused.status_code == 409
    assert me.json()["data"] == {"userId": "local", "admin": False}
