"""Per-user limits over HTTP, on both backends: in process, and in Redis across instances.

Over a limit the answer is 429 with `Retry-After` and the error envelope,
before any model call; another user is never held back by it.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, running_service, settings_for
from tests.support.sse import collect, events

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
KEYS = "key-alice:alice,key-bob:bob"


async def start_and_leave(client: httpx.AsyncClient, conversation: str) -> None:
    """Ask as Alice, read up to the first text, and go: the run goes on without the client."""
    params = {"query": "A long one", "conversationId": conversation}
    async with client.stream("GET", "/agent/chat/stream", params=params, headers=ALICE) as r:
        async for event in events(r):
            if event["type"] == "text":
                return
    pytest.fail("the stream ended before any text")


async def ask(
    client: httpx.AsyncClient, conversation: str, headers: dict[str, str]
) -> tuple[httpx.Response, list[dict[str, Any]]]:
    params = {"query": "Hi", "conversationId": conversation}
    async with client.stream("GET", "/agent/chat/stream", params=params, headers=headers) as r:
        if r.status_code != 200:
            await r.aread()
            return r, []
        return r, await collect(r)


def assert_too_many(response: httpx.Response, longest_wait: int) -> None:
    assert response.status_code == 429
    body = response.json()
    assert body == {"code": 429, "message": body["message"], "data": None}
    assert body["message"].startswith("Too many")
    assert 1 <= int(response.headers["retry-after"]) <= longest_wait


async def test_streams_at_once_are_limited_per_user_until_a_run_ends(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Still"), Reply.hang(first_text="Going"))
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS, max_streams_per_user=2)
    async with running_service(settings) as client:
        await start_and_leave(client, "c-1")
        await start_and_leave(client, "c-2")
        calls_before = len(fake_llm.requests)
        refused, _ = await ask(client, "c-3", ALICE)
        calls_after_refusal = len(fake_llm.requests)
        bob, bob_events = await ask(client, "c-bob", BOB)
        stopped = await client.get("/agent/stop", params={"conversationId": "c-1"}, headers=ALICE)
        again, again_events = await ask(client, "c-3", ALICE)

    assert_too_many(refused, 5)
    assert "at most 2 may run at once" in refused.json()["message"]
    assert calls_after_refusal == calls_before
    assert bob.status_code == 200
    assert bob_events[-1]["status"] == "completed"
    assert stopped.json()["success"] is True
    assert again.status_code == 200
    assert again_events[-1]["status"] == "completed"


@pytest.mark.parametrize("at_once", [8, 0], ids=["streams-at-once-limited", "only-a-minute"])
async def test_new_streams_a_minute_are_limited_per_user(
    at_once: int, backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(
        backend,
        tmp_path,
        fake_llm,
        api_keys=KEYS,
        streams_per_minute=2,
        max_streams_per_user=at_once,
    )
    async with running_service(settings) as client:
        answered = [await ask(client, f"c-{n}", ALICE) for n in range(2)]
        calls_before = len(fake_llm.requests)
        refused, _ = await ask(client, "c-3", ALICE)
        calls_after_refusal = len(fake_llm.requests)
        bob, _ = await ask(client, "c-bob", BOB)

    assert [r.status_code for r, _ in answered] == [200, 200]
    # Two a minute: the next token comes within 30 s.
    assert_too_many(refused, 30)
    assert refused.json()["message"] == "Too many new streams: at most 2 a minute for one user"
    assert calls_after_refusal == calls_before
    assert bob.status_code == 200


async def test_uploads_a_minute_are_limited_per_user(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS, uploads_per_minute=1)
    note = {"file": ("note.txt", b"A short note.\n")}
    async with running_service(settings) as client:
        first = await client.post("/file/upload", files=note, headers=ALICE)
        second = await client.post("/file/upload", files=note, headers=ALICE)
        bobs = await client.post("/file/upload", files=note, headers=BOB)
        listed = await client.get("/file/list", headers=ALICE)

    assert first.status_code == 200
    assert_too_many(second, 60)
    assert second.json()["message"] == "Too many uploads: at most 1 a minute for one user"
    assert bobs.status_code == 200
    assert len(listed.json()["data"]) == 1


async def head_of_answer_to_unsent_upload(
    client: httpx.AsyncClient, headers: dict[str, str], declared_bytes: int
) -> tuple[int, dict[str, str]]:
    """Announce an upload of `declared_bytes`, send only its first part's head, read the answer.

    A server that reads the body before answering waits for bytes that never
    come, and the answer's deadline fails the test.
    """
    url = client.base_url
    assert url.host
    assert url.port
    boundary = "hostile-boundary"
    start = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    )
    head = [
        "POST /file/upload HTTP/1.1",
        f"Host: {url.host}:{url.port}",
        f"Content-Type: multipart/form-data; boundary={boundary}",
        f"Content-Length: {declared_bytes}",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n" + start).encode())
        await writer.drain()
        async with asyncio.timeout(10):
            answer = await reader.readuntil(b"\r\n\r\n")
    finally:
        writer.close()
    status_line, *lines = answer.decode().strip().split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split()[1]), {k.lower(): v for k, v in fields.items()}


async def test_an_upload_over_the_limit_is_refused_before_its_body_is_read(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS, uploads_per_minute=1)
    note = {"file": ("note.txt", b"A short note.\n")}
    forty_mb = 40 * 1024 * 1024
    async with running_service(settings) as client:
        first = await client.post("/file/upload", files=note, headers=ALICE)
        over, over_headers = await head_of_answer_to_unsent_upload(client, ALICE, forty_mb)
        anonymous, _ = await head_of_answer_to_unsent_upload(client, {}, forty_mb)
        bobs = await client.post("/file/upload", files=note, headers=BOB)

    assert first.status_code == 200
    assert over == 429
    assert 1 <= int(over_headers["retry-after"]) <= 60
    assert anonymous == 401
    assert bobs.status_code == 200


SLOW_WORDS = 1000
"""Words of each of Alice's slow answers, one every `SLOW_DELAY` s: they outlast the test."""
SLOW_DELAY = 0.05
SLOWDOWN_ALLOWED = 5
"""How many times Bob's usual wait for his first text it may take while Alice's streams run
(or half a second, on a machine quick enough that the usual wait is tiny)."""
SAMPLES = 5


async def seconds_to_first_text(client: httpx.AsyncClient, conversation: str) -> float:
    params = {"query": "Hi", "conversationId": conversation}
    asked = time.monotonic()
    async with (
        asyncio.timeout(10),
        client.stream("GET", "/agent/chat/stream", params=params, headers=BOB) as r,
    ):
        async for event in events(r):
            if event["type"] == "text":
                return time.monotonic() - asked
    pytest.fail("Bob's stream ended before any text")


async def read_slowly(client: httpx.AsyncClient, conversation: str, talking: asyncio.Event) -> None:
    """Alice's client: reads her stream as it trickles, saying when the first text came."""
    params = {"query": "A long one", "conversationId": conversation}
    async with client.stream("GET", "/agent/chat/stream", params=params, headers=ALICE) as r:
        assert r.status_code == 200
        async for event in events(r):
            if event["type"] == "text":
                talking.set()


async def test_one_users_slow_streams_do_not_delay_another_users_first_event(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    limit = 8
    settings = settings_for(
        backend,
        tmp_path,
        fake_llm,
        api_keys=KEYS,
        max_streams_per_user=limit,
        recommendations_enabled=False,
    )
    slow = Reply.text("word " * SLOW_WORDS, delay=SLOW_DELAY)
    async with running_service(settings) as client:
        await seconds_to_first_text(client, "bob-warm-up")
        baseline = [await seconds_to_first_text(client, f"bob-{n}") for n in range(SAMPLES)]
        fake_llm.script(*[slow] * limit)
        talking = [asyncio.Event() for _ in range(limit)]
        async with asyncio.TaskGroup() as group:
            readers = [
                group.create_task(read_slowly(client, f"alice-{n}", talking[n]))
                for n in range(limit)
            ]
            await asyncio.gather(*(t.wait() for t in talking))
            refused, _ = await ask(client, "alice-over", ALICE)
            loaded = [await seconds_to_first_text(client, f"bob-busy-{n}") for n in range(SAMPLES)]
            still_running = sum(not t.done() for t in readers)
            for reader in readers:
                reader.cancel()

    assert refused.status_code == 429
    assert still_running == limit
    usual, busy = statistics.median(baseline), statistics.median(loaded)
    assert busy < max(usual * SLOWDOWN_ALLOWED, 0.5), (baseline, loaded)
