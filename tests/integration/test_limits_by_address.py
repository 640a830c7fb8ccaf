"""Without authentication, limits count per client address, while history stays one user's.

The test client is the reverse proxy (127.0.0.1, in uvicorn's default
`FORWARDED_ALLOW_IPS`): `X-Forwarded-For` names the office PC behind it.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, running_service, settings_for
from tests.support.sse import collect


async def ask(client: httpx.AsyncClient, conversation: str, address: str) -> int:
    params = {"query": "Hi", "conversationId": conversation}
    headers = {"X-Forwarded-For": address}
    async with client.stream("GET", "/agent/chat/stream", params=params, headers=headers) as r:
        if r.status_code == 200:
            await collect(r)
        return r.status_code


async def test_each_address_has_its_own_limits_and_everyone_the_one_history(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(*(Reply.text(f"Answer {n}.") for n in range(3)))
    settings = settings_for(backend, tmp_path, fake_llm, streams_per_minute=1)
    async with running_service(settings) as client:
        first = await ask(client, "pc-1-a", "192.0.2.10")
        again = await ask(client, "pc-1-b", "192.0.2.10")
        other = await ask(client, "pc-2-a", "192.0.2.11")
        listed = (await client.get("/session/list")).json()["data"]["records"]

    assert (first, again, other) == (200, 429, 200)
    assert sorted(r["conversationId"] for r in listed) == ["pc-1-a", "pc-2-a"]
