"""Which browser origins may call the API: any while auth is off, only listed ones with keys.

The original web client runs on another origin and sends `Cache-Control` on
its stream request, so its browser asks first (a preflight); every answer,
the event stream included, must then name the origin as allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import running_service, service_settings
from tests.support.sse import collect

FRONT = "http://front.test:5173"
OTHER = "http://other.test"


def preflight(origin: str, method: str = "GET", headers: str = "cache-control") -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": headers,
    }


@pytest.mark.parametrize(
    ("api_keys", "cors_origins", "origin", "allowed"),
    [
        pytest.param("", "*", OTHER, "*", id="no-auth-wildcard"),
        pytest.param("", FRONT, FRONT, FRONT, id="no-auth-listed"),
        pytest.param("", FRONT, OTHER, None, id="no-auth-unlisted"),
        pytest.param("key-a:alice", "*", OTHER, None, id="auth-wildcard-refused"),
        pytest.param("key-a:alice", f"*, {FRONT}", FRONT, FRONT, id="auth-listed"),
        pytest.param("key-a:alice", FRONT, OTHER, None, id="auth-unlisted"),
    ],
)
async def test_only_allowed_origins_get_past_the_preflight(
    tmp_path: Path, sqlite_url: str, api_keys: str, cors_origins: str, origin: str, allowed: str
) -> None:
    settings = service_settings(tmp_path, sqlite_url, api_keys=api_keys, cors_origins=cors_origins)
    async with running_service(settings) as client:
        stream = await client.options(
            "/agent/chat/stream", headers=preflight(origin, headers="cache-control,authorization")
        )
        delete = await client.options("/session/c-1", headers=preflight(origin, method="DELETE"))
        rename = await client.options("/session/c-1", headers=preflight(origin, method="PATCH"))
        health = await client.get("/health", headers={"Origin": origin})

    if allowed is None:
        assert stream.status_code == 400
        assert delete.status_code == 400
        assert rename.status_code == 400
        for response in (stream, delete, rename, health):
            assert "access-control-allow-origin" not in response.headers
        return
    assert stream.status_code == 200
    assert stream.headers["access-control-allow-origin"] == allowed
    allowed_headers = stream.headers["access-control-allow-headers"].lower()
    assert "cache-control" in allowed_headers
    assert "authorization" in allowed_headers
    assert delete.status_code == 200
    assert "DELETE" in delete.headers["access-control-allow-methods"]
    # Renaming, pinning, moving a conversation and the account's preferences are PATCHes.
    assert rename.status_code == 200
    assert "PATCH" in rename.headers["access-control-allow-methods"]
    assert health.headers["access-control-allow-origin"] == allowed
    assert "access-control-allow-credentials" not in health.headers


async def test_the_event_stream_itself_names_the_allowed_origin(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with FakeOpenAI() as fake:
        fake.script(Reply.text("Hi."))
        settings = service_settings(tmp_path, sqlite_url, llm_base_url=fake.base_url)
        async with (
            running_service(settings) as client,
            client.stream(
                "GET",
                "/agent/chat/stream",
                params={"query": "Hello", "conversationId": "c-cors"},
                headers={"Origin": OTHER, "Cache-Control": "no-cache"},
            ) as response,
        ):
            assert response.headers["access-control-allow-origin"] == "*"
            events = await collect(response)
    assert events[-1]["status"] == "completed"
