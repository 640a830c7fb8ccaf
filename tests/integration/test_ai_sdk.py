"""The AI SDK UI message stream as `useChat` meets it: the `ai` package's
DefaultChatTransport and readUIMessageStream, run by Node, against the real app on
a socket, with the scripted model and the fake search server.

readUIMessageStream is what `useChat` builds its assistant message with, and it
throws on a part out of order (a delta for a text never started, an output for
an unknown tool call), so a message it builds is one `useChat` shows. Each test
runs on the embedded defaults and on the production pair (PostgreSQL, Redis);
on the latter the resume reads the shared log.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from app.llm.errors import ModelHTTPError
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import Backend, history, running_service
from tests.integration.test_deep_research import deep_settings
from tests.support.js_clients import js_client, run_client
from tests.support.scripted_model import ModelRequest, Reply, ScriptedModel

ANSWER = "Python 3.13 is out [1]."
SEARCH = Reply.tool_calls(("web_search", {"query": "python 3.13"}), reasoning="Let me search.")
ANSWER_PARTS = ["text-start", "text-delta", "text-end", "source-url", "source-url", "finish"]
"""The parts of the answer after the search, folded (`chunk_types`)."""


@pytest.fixture
def client_script() -> Path:
    return js_client("ai-sdk", "ai")


def sdk_service(
    backend: Backend, tmp_path: Path, search: FakeTavily, model: ScriptedModel
) -> AbstractAsyncContextManager[httpx.AsyncClient]:
    return running_service(deep_settings(backend, tmp_path, search), model=model)


def api_of(client: httpx.AsyncClient, kind: str = "chat") -> str:
    return str(client.base_url.join(f"/ai-sdk/{kind}"))


def chunk_types(chunks: list[dict[str, Any]]) -> list[str]:
    """Chunk types in order, with runs of deltas folded into one."""
    out: list[str] = []
    for chunk in chunks:
        if chunk["type"].endswith("-delta") and out and out[-1] == chunk["type"]:
            continue
        out.append(chunk["type"])
    return out


def held(release: asyncio.Event, text: str) -> Any:
    """A model step that answers `text` once the test sets `release`."""

    async def step(request: ModelRequest) -> Reply:
        await release.wait()
        return Reply.text(text)

    return step


async def test_a_turn_with_a_tool_is_a_message_use_chat_can_show_and_is_stored(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily, client_script: Path
) -> None:
    model = ScriptedModel(SEARCH, Reply.text(ANSWER))
    spec = {"chatId": "sdk-tool", "text": "What is new in Python?"}
    async with sdk_service(backend, tmp_path, fake_search, model) as client:
        async with run_client(client_script, api_of(client), spec) as node:
            await node.finish()
        stored = await history(client, "sdk-tool")

    assert node.of("error") == []
    chunks = node.of("chunk")
    assert chunk_types(chunks) == [
        "start",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "tool-input-available",
        "tool-output-available",
        *ANSWER_PARTS,
    ]
    assert chunks[-1]["finishReason"] == "stop"
    (message,) = node.of("message")
    parts = message["parts"]
    assert [p["type"] for p in parts] == [
        "reasoning",
        "dynamic-tool",
        "text",
        "source-url",
        "source-url",
    ]
    tool = parts[1]
    assert (tool["toolName"], tool["state"], tool["input"]) == (
        "web_search",
        "output-available",
        {"query": "python 3.13"},
    )
    assert "Facts about python 3.13" in tool["output"]
    assert parts[2]["text"] == ANSWER
    assert [p["url"] for p in parts[3:]] == [
        "https://example.test/python-3.13/1",
        "https://example.test/python-3.13/2",
    ]
    assert message["metadata"]["status"] == "completed"
    assert [(t["question"], t["answer"]) for t in stored] == [("What is new in Python?", ANSWER)]


async def test_a_cut_connection_is_resumed_from_the_run_log_to_the_whole_message(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily, client_script: Path
) -> None:
    release = asyncio.Event()
    model = ScriptedModel(SEARCH, held(release, ANSWER))
    spec = {"chatId": "sdk-cut", "text": "What is new?", "cutAfter": "tool-output-available"}
    async with sdk_service(backend, tmp_path, fake_search, model) as client:
        async with run_client(client_script, api_of(client), spec) as node:
            await node.until("cut")
            # The reconnect replays the turn from its start: the tool's output comes again.
            await node.until("chunk", lambda c: c["type"] == "tool-output-available")
            async with client.stream("GET", "/ai-sdk/chat/sdk-cut/stream") as raw:
                assert raw.status_code == 200
                assert raw.headers["x-vercel-ai-ui-message-stream"] == "v1"
            release.set()
            await node.finish()
        stored = await history(client, "sdk-cut")

    assert node.of("error") == []
    (message,) = node.of("message")
    assert [p["type"] for p in message["parts"]] == [
        "reasoning",
        "dynamic-tool",
        "text",
        "source-url",
        "source-url",
    ]
    assert message["parts"][2]["text"] == ANSWER
    assert [(t["answer"], t["status"]) for t in stored] == [(ANSWER, "completed")]


async def read_parts(
    response: httpx.Response, until: str | None = None
) -> tuple[list[dict[str, Any]], int]:
    """A UI message stream's parts up to the first of type `until` (else to `[DONE]`), and
    the last `id:` it carried."""
    parts: list[dict[str, Any]] = []
    last_id = 0
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            last_id = int(line.removeprefix("id: "))
        elif line.startswith("data: "):
            if line == "data: [DONE]":
                break
            parts.append(orjson.loads(line.removeprefix("data: ")))
            if parts[-1]["type"] == until:
                break
    return parts, last_id


async def test_a_reconnect_with_last_event_id_gets_only_the_parts_after_it(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    release = asyncio.Event()
    model = ScriptedModel(SEARCH, held(release, ANSWER))
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is new?"}]}
    body = {"id": "sdk-after", "messages": [user], "trigger": "submit-message"}
    path = "/ai-sdk/chat/sdk-after/stream"
    async with sdk_service(backend, tmp_path, fake_search, model) as client:
        async with client.stream("POST", "/ai-sdk/chat", json=body) as first:
            before, last_id = await read_parts(first, until="tool-output-available")
        release.set()
        headers = {"Last-Event-ID": str(last_id)}
        async with client.stream("GET", path, headers=headers) as again:
            after, _ = await read_parts(again)
        # The turn has ended since: from where the client is, it still gets the end.
        async with client.stream("GET", path, headers=headers) as late:
            after_the_end, _ = await read_parts(late)
        from_the_start = await client.get(path)
        bad = await client.get(path, headers={"Last-Event-ID": "x"})

    assert chunk_types(before)[-2:] == ["tool-input-available", "tool-output-available"]
    assert chunk_types(after) == ANSWER_PARTS
    assert "".join(p.get("delta", "") for p in after) == ANSWER
    assert after_the_end == after
    # Without an id it is useChat's resume on mount: nothing runs, nothing to replay.
    assert from_the_start.status_code == 204
    assert bad.status_code == 400


async def test_a_stop_ends_the_stream_with_abort_and_resume_then_finds_nothing_running(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily, client_script: Path
) -> None:
    model = ScriptedModel(SEARCH, held(asyncio.Event(), "never"))
    spec = {"chatId": "sdk-stop", "text": "Search, then wait"}
    async with sdk_service(backend, tmp_path, fake_search, model) as client:
        async with run_client(client_script, api_of(client), spec) as node:
            await node.until("chunk", lambda c: c["type"] == "tool-output-available")
            stop = await client.post("/agent/stop", json={"conversationId": "sdk-stop"})
            await node.finish()
        async with run_client(client_script, api_of(client), {"chatId": "sdk-stop"}) as again:
            await again.finish()
        stored = await history(client, "sdk-stop")

    assert stop.json()["success"] is True
    assert node.of("error") == []
    assert chunk_types(node.of("chunk"))[-2:] == ["abort", "finish"]
    (message,) = node.of("message")
    assert message["metadata"]["status"] == "stopped"
    assert again.of("resumed") == [None]
    assert [t["status"] for t in stored] == ["stopped"]


async def test_a_failed_turn_ends_with_an_error_part_finish_and_done(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    def refuse(request: ModelRequest) -> Reply:
        raise ModelHTTPError(400, "bad request")

    model = ScriptedModel(SEARCH, refuse)
    body = {
        "id": "sdk-fail",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        "trigger": "submit-message",
    }
    async with sdk_service(backend, tmp_path, fake_search, model) as client:
        response = await client.post("/ai-sdk/chat", json=body)
        stored = await history(client, "sdk-fail")

    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    parts = [orjson.loads(d) for d in data[:-1]]
    assert chunk_types(parts)[-3:] == ["tool-output-available", "error", "finish"]
    assert parts[-2]["errorText"]
    assert "bad request" not in parts[-2]["errorText"]
    assert parts[-1]["finishReason"] == "error"
    assert [t["status"] for t in stored] == ["failed"]


async def test_bad_requests_are_refused_before_any_stream(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}
    async with sdk_service(backend, tmp_path, fake_search, ScriptedModel()) as client:
        no_text = await client.post("/ai-sdk/chat", json={"id": "c1", "messages": []})
        bad_id = await client.post("/ai-sdk/chat", json={"id": "no spaces", "messages": [user]})
        no_kind = await client.post("/ai-sdk/nope", json={"id": "c1", "messages": [user]})
        no_file = await client.post("/ai-sdk/file", json={"id": "c1", "messages": [user]})
        resume_bad = await client.get("/ai-sdk/chat/no%20spaces/stream")

    assert [r.status_code for r in (no_text, bad_id, no_kind, no_file, resume_bad)] == [
        400,
        400,
        404,
        400,
        400,
    ]
    assert no_text.json() == {"code": 400, "message": no_text.json()["message"], "data": None}
