"""OIDC access tokens as bearer tokens, checked against a local provider's discovery and JWKS.

The provider (tests/fakes/oidc_server.py) signs with its own RSA keys; the
service reads its keys through the outbound guard, so the tests allow
127.0.0.1 as a deployment would allow its intranet provider.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from tests.fakes.oidc_server import FakeIdentityProvider, SigningKey
from tests.integration.service import running_service, service_settings

INVALID = 'Bearer error="invalid_token"'


@pytest.fixture
async def idp() -> AsyncIterator[FakeIdentityProvider]:
    async with FakeIdentityProvider(audience="dodo-api").running() as provider:
        yield provider


def oidc_settings(
    tmp_path: Path, sqlite_url: str, idp: FakeIdentityProvider, **more: Any
) -> Settings:
    values: dict[str, Any] = {
        "oidc_issuer": idp.issuer,
        "oidc_audience": "dodo-api",
        "outbound_allowlist": "127.0.0.1",
    }
    return service_settings(tmp_path, sqlite_url, **(values | more))


async def sessions(client: httpx.AsyncClient, token: str) -> httpx.Response:
    return await client.get("/session/list", headers={"Authorization": f"Bearer {token}"})


async def test_only_a_valid_token_of_the_issuer_lets_its_user_in(
    tmp_path: Path, sqlite_url: str, idp: FakeIdentityProvider
) -> None:
    stranger = SigningKey("key-9")
    async with running_service(oidc_settings(tmp_path, sqlite_url, idp)) as client:
        valid = await sessions(client, idp.mint("alice"))
        refused = {
            "expired": await sessions(client, idp.mint("alice", exp_in=-120)),
            "wrong audience": await sessions(client, idp.mint("alice", audience="other-app")),
            "wrong issuer": await sessions(client, idp.mint("alice", issuer=idp.base_url)),
            "unknown kid": await sessions(client, idp.mint("alice", key=stranger)),
            "alg none": await sessions(client, idp.forged_unsigned("alice")),
            "HS256 with the public key": await sessions(client, idp.forged_hmac("alice")),
            "an ID token": await sessions(client, idp.mint("alice", extra={"typ": "ID"})),
            "not yet valid": await sessions(
                client, idp.mint("alice", extra={"nbf": 2_000_000_000, "exp": 2_000_000_300})
            ),
        }
        none = await client.get("/session/list")

    assert valid.status_code == 200
    assert {why: r.status_code for why, r in refused.items()} == dict.fromkeys(refused, 401)
    assert {r.headers["www-authenticate"] for r in refused.values()} == {INVALID}
    assert refused["expired"].json()["message"] == "The API key or token is invalid or expired"
    assert (none.status_code, none.headers["www-authenticate"]) == (401, "Bearer")


async def test_a_stream_takes_the_token_as_access_token(
    tmp_path: Path, sqlite_url: str, idp: FakeIdentityProvider
) -> None:
    async with running_service(oidc_settings(tmp_path, sqlite_url, idp)) as client:
        listed = await client.get("/file/list", params={"access_token": idp.mint("alice")})
        expired = await client.get(
            "/agent/runs", params={"access_token": idp.mint("alice", exp_in=-120)}
        )

    assert listed.status_code == 200
    assert (expired.status_code, expired.headers["www-authenticate"]) == (401, INVALID)


async def test_a_rotated_key_is_fetched_when_a_token_names_it(
    tmp_path: Path, sqlite_url: str, idp: FakeIdentityProvider
) -> None:
    settings = oidc_settings(tmp_path, sqlite_url, idp, oidc_jwks_refresh_seconds=0)
    async with running_service(settings) as client:
        before = await sessions(client, idp.mint("alice"))
        reads_before = idp.jwks_reads
        idp.rotate()
        after = await sessions(client, idp.mint("alice"))
        again = await sessions(client, idp.mint("bob"))

    assert (before.status_code, after.status_code, again.status_code) == (200, 200, 200)
    assert (reads_before, idp.jwks_reads) == (1, 2)


async def test_unknown_kids_refetch_the_keys_at_most_once_a_period(
    tmp_path: Path, sqlite_url: str, idp: FakeIdentityProvider
) -> None:
    settings = oidc_settings(tmp_path, sqlite_url, idp, oidc_jwks_refresh_seconds=3600)
    async with running_service(settings) as client:
        first = await sessions(client, idp.mint("alice"))
        made_up = [await sessions(client, idp.mint("alice", kid=f"made-up-{n}")) for n in range(5)]

    assert first.status_code == 200
    assert [r.status_code for r in made_up] == [401] * 5
    assert idp.jwks_reads == 1


async def test_an_unreachable_provider_answers_503_not_401(
    tmp_path: Path, sqlite_url: str, idp: FakeIdentityProvider
) -> None:
    token = idp.mint("alice")
    # The guard refuses loopback unless allowed: the provider cannot be read.
    settings = oidc_settings(tmp_path, sqlite_url, idp, outbound_allowlist="")
    async with running_service(settings) as client:
        answer = await sessions(client, token)

    assert answer.status_code == 503
    assert answer.json()["message"] == "The identity provider could not be reached"


async def test_the_agent_card_and_the_page_config_name_the_issuer(
    tmp_path: Path, sqlite_url: str, idp: FakeIdentityProvider
) -> None:
    settings = oidc_settings(tmp_path, sqlite_url, idp, oidc_client_id="dodo-page")
    async with running_service(settings) as client:
        card = (await client.get("/.well-known/agent-card.json")).json()
        config = (await client.get("/auth/config")).json()["data"]
        call = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"contextId": "c-1"}}

        async def a2a(token: str) -> httpx.Response:
            headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
            return await client.post("/a2a", json=call, headers=headers)

        listed = await a2a(idp.mint("alice"))
        expired = await a2a(idp.mint("alice", exp_in=-120))

    assert card["securitySchemes"]["oidc"]["openIdConnectSecurityScheme"] == {
        "openIdConnectUrl": f"{idp.issuer}/.well-known/openid-configuration",
        "description": "An access token of the service's identity provider",
    }
    assert set(card["securitySchemes"]) == {"bearer", "oidc"}
    assert config == {
        "methods": ["apiKey", "oidc"],
        "oidc": {
            "issuer": idp.issuer,
            "clientId": "dodo-page",
            "scopes": "openid profile email",
            "authorizationEndpoint": f"{idp.issuer}/auth",
            "tokenEndpoint": f"{idp.issuer}/token",
            "endSessionEndpoint": f"{idp.issuer}/logout",
        },
    }
    assert listed.status_code == 200
    assert "result" in listed.json()
    assert (expired.status_code, expired.headers["www-authenticate"]) == (401, INVALID)
