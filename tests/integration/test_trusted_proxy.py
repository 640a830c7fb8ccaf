"""A sign-in proxy's user header, and its groups: believed from `AUTH_TRUSTED_PROXIES` only.

The test client connects from 127.0.0.1, so it is the proxy when that
address is listed, and a stranger when only another range is.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from app.factory import create_app
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import ask, running_service, service_settings

ALICE = {"X-Forwarded-User": "alice"}
BOB = {"X-Forwarded-User": "bob"}


async def test_the_header_from_a_trusted_proxy_is_the_user(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Hello Alice."))
    settings = service_settings(
        tmp_path,
        sqlite_url,
        llm_base_url=fake_llm.base_url,
        auth_trusted_header="X-Forwarded-User",
        auth_trusted_proxies="10.0.0.0/8, 127.0.0.1/32",
    )
    async with running_service(settings) as client:
        events = await ask(client, "Hi", "conv-alice", headers=ALICE)
        alice = (await client.get("/session/list", headers=ALICE)).json()["data"]["records"]
        bob = (await client.get("/session/list", headers=BOB)).json()["data"]["records"]
        bob_reads = await client.get("/session/conv-alice", headers=BOB)
        nobody = await client.get("/session/list")

    assert events[-1]["status"] == "completed"
    assert [r["conversationId"] for r in alice] == ["conv-alice"]
    assert bob == []
    assert bob_reads.status_code == 404
    assert nobody.status_code == 401


async def test_the_header_from_elsewhere_is_ignored_and_logged_once(
    tmp_path: Path, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = service_settings(
        tmp_path,
        sqlite_url,
        api_keys="key-bob:bob",
        auth_trusted_header="X-Forwarded-User",
        auth_trusted_proxies="10.0.0.0/8",
    )
    with caplog.at_level(logging.WARNING, logger="app.auth"):
        async with running_service(settings) as client:
            forged = [await client.get("/session/list", headers=ALICE) for _ in range(3)]
            with_key = await client.get(
                "/auth/me", headers={**ALICE, "Authorization": "Bearer key-bob"}
            )

    assert [r.status_code for r in forged] == [401, 401, 401]
    # The key says bob; the forged header changes nothing.
    assert with_key.json()["data"] == {"userId": "bob", "admin": False}
    warned = [r.getMessage() for r in caplog.records if r.name == "app.auth.proxy"]
    assert warned == [
        "x-forwarded-user from 127.0.0.1 is ignored: that address is not in AUTH_TRUSTED_PROXIES"
    ]


async def test_the_groups_a_trusted_proxy_lists_make_admins_and_count_for_nothing_alone(
    tmp_path: Path, sqlite_url: str
) -> None:
    settings = service_settings(
        tmp_path,
        sqlite_url,
        api_keys="key-bob:bob",
        auth_trusted_header="X-Forwarded-User",
        auth_trusted_proxies="127.0.0.1/32",
        auth_trusted_groups_header="X-Forwarded-Groups",
        admin_users="group:ops",
    )
    ops_member = {**ALICE, "X-Forwarded-Groups": "dev, ops"}
    not_member = {"X-Forwarded-User": "carol", "X-Forwarded-Groups": "dev,ops-team"}
    groups_alone = {"Authorization": "Bearer key-bob", "X-Forwarded-Groups": "ops"}
    async with running_service(settings) as client:
        me = [
            (await client.get("/auth/me", headers=headers)).json()["data"]
            for headers in (ops_member, not_member, groups_alone)
        ]
        runs = [
            (await client.get("/admin/runs", headers=headers)).status_code
            for headers in (ops_member, not_member, groups_alone)
        ]

    assert me == [
        {"userId": "alice", "admin": True},
        {"userId": "carol", "admin": False},
        {"userId": "bob", "admin": False},
    ]
    assert runs == [200, 404, 404]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"auth_trusted_header": "X-Forwarded-User"}, "AUTH_TRUSTED_HEADER needs"),
        (
            {"auth_trusted_header": "X-Forwarded-User", "auth_trusted_proxies": "10.0.0.300/8"},
            "AUTH_TRUSTED_PROXIES: ",
        ),
        ({"auth_trusted_groups_header": "X-Forwarded-Groups"}, "AUTH_TRUSTED_GROUPS_HEADER needs"),
        ({"oidc_issuer": "https://id.example.com/realms/team"}, "OIDC_ISSUER needs"),
        ({"oidc_issuer": "id.example.com", "oidc_audience": "dodo"}, "must be an http"),
    ],
)
def test_sign_in_settings_that_cannot_work_stop_the_start(
    tmp_path: Path, settings: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        create_app(service_settings(tmp_path, "sqlite+aiosqlite://", **settings))
