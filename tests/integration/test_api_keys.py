"""API keys, listed plain or as their SHA-256, over HTTP."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from app.factory import create_app
from tests.integration.service import running_service, service_settings

CAROL_KEY = "carol-secret-key-0123"
CAROL_DIGEST = hashlib.sha256(CAROL_KEY.encode()).hexdigest()


async def test_a_key_listed_as_its_sha256_lets_its_user_in(tmp_path: Path, sqlite_url: str) -> None:
    keys = f"sha256:{CAROL_DIGEST.upper()}:carol,key-alice:alice"
    settings = service_settings(tmp_path, sqlite_url, api_keys=keys)
    async with running_service(settings) as client:

        async def status(token: str) -> int:
            headers = {"Authorization": f"Bearer {token}"}
            return (await client.get("/session/list", headers=headers)).status_code

        carol = await status(CAROL_KEY)
        alice = await status("key-alice")
        by_digest = await status(CAROL_DIGEST)
        wrong = await status(CAROL_KEY + "x")
        by_query = await client.get("/file/list", params={"access_token": CAROL_KEY})
        none = await client.get("/session/list")

    assert (carol, alice) == (200, 200)
    # The digest is what the configuration holds, not a key: it lets no one in.
    assert (by_digest, wrong) == (401, 401)
    assert by_query.status_code == 200
    assert none.status_code == 401
    assert none.json() == {"code": 401, "message": "A valid API key is required", "data": None}


@pytest.mark.parametrize(
    "entry", ["sha256:abc:carol", f"sha256:{CAROL_DIGEST}", f"sha256:{CAROL_DIGEST[:-1]}g:carol"]
)
def test_a_malformed_hashed_key_stops_the_start_without_showing_it(
    tmp_path: Path, entry: str
) -> None:
    settings = service_settings(tmp_path, "sqlite+aiosqlite://", api_keys=f"key-a:alice,{entry}")
    with pytest.raises(ValueError, match="API_KEYS entry 2 must be") as raised:
        create_app(settings)

    assert str(raised.value) == "API_KEYS entry 2 must be sha256:<64 hex digits>:user"
