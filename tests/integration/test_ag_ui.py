"""AG-UI as CopilotKit meets it: the real `@ag-ui/client` HttpAgent, run by Node, against
the real app on a socket, with fake model and search servers.

The client checks the event order itself (a message ended before the run
finishes, nothing after `RUN_ERROR`, ...), so a turn it accepts is one every
AG-UI front-end accepts. Each test runs on the embedded defaults and on the
production pair (PostgreSQL, Redis).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from app.llm.errors import ModelHTTPError
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import Backend, history, running_service, settings_with_search
from tests.integration.test_deep_research import (
    INDEPENDENT,
    QUESTION,
    deep_settings,
    research_service,
)
from tests.support.js_clients import js_client, run_client
from tests.support.research import Researcher
from tests.support.scripted_model import ModelRequest, ScriptedModel
from tests.support.scripted_model import Reply as ModelReply

FOLDED = ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT")


@pytest.fixture
def client_script() -> Path:
    return js_client("ag-ui", "@ag-ui/client")


def event_types(events: list[dict[str, Any]]) -> list[str]:
    """Event types in order, with runs of content deltas folded into one."""
    out: list[str] = []
    for event in events:
        if event["type"] in FOLDED and out and out[-1] == event["type"]:
            continue
        out.append(event["type"])
    return out


def url_of(client: httpx.AsyncClient, kind: str) -> str:
    return str(client.base_url.join(f"/ag-ui/{kind}"))


async def test_a_chat_turn_with_a_tool_call_reaches_the_client_in_order_and_is_stored(
    backend: Backend,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
    client_script: Path,
) -> None:
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "python 3.13"})]),
        Reply.text("Python 3.13 is out [1].", chunks=3),
    )
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search)
    spec = {"threadId": "t-chat", "runs": [{"message": "What is new in Python?"}]}
    async with running_service(settings) as client:
        async with run_client(client_script, url_of(client, "chat"), spec) as node:
            lines = await node.finish()
        stored = await history(client, "t-chat")

    assert node.of("error") == []
    events = node.of("event")
    assert event_types(events) == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "CUSTOM",
        "RUN_FINISHED",
    ]
    started, finished = events[0], events[-1]
    assert (started["threadId"], started["runId"]) == ("t-chat", "run-1")
    assert finished["outcome"] == {"type": "success"}
    assert finished["result"]["status"] == "completed"
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert (call["toolCallName"], result["toolCallId"]) == ("web_search", call["toolCallId"])
    assert "Facts about python 3.13" in result["content"]
    custom = next(e for e in events if e["type"] == "CUSTOM")
    assert custom["name"] == "reference"
    assert [ref["url"] for ref in custom["value"]] == [
        "https://example.test/python-3.13/1",
        "https://example.test/python-3.13/2",
    ]

    # What the client made of it: the tool call, its result, and the answer as messages.
    messages = lines[-1]["messages"]
    assert [m["role"] for m in messages] == ["user", "reasoning", "assistant", "tool", "assistant"]
    assert messages[2]["toolCalls"][0]["function"] == {
        "name": "web_search",
        "arguments": orjson.dumps({"query": "python 3.13"}).decode(),
    }
    assert messages[-1]["content"] == "Python 3.13 is out [1]."
    (turn,) = stored
    assert (turn["question"], turn["answer"], turn["status"]) == (
        "What is new in Python?",
        "Python 3.13 is out [1].",
        "completed",
    )


async def test_a_stop_from_our_endpoint_ends_the_client_run_as_cancelled(
    backend: Backend,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
    client_script: Path,
) -> None:
    fake_search.hang = True
    fake_llm.script(Reply.tool_calls([("web_search", {"query": "slow"})], text="Let me look."))
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search)
    spec = {"threadId": "t-stop", "runs": [{"message": "Search slowly"}]}
    async with running_service(settings) as client:
        async with run_client(client_script, url_of(client, "chat"), spec) as node:
            await node.until("event", lambda e: e["type"] == "TOOL_CALL_END")
            await fake_search.started.wait()
            stop = await client.post("/agent/stop", json={"conversationId": "t-stop"})
            lines = await node.finish()
        stored = await history(client, "t-stop")

    assert stop.json()["success"] is True
    assert node.of("error") == []
    events = node.of("event")
    assert event_types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert events[-1]["result"]["status"] == "stopped"
    assert node.of("finished") == [{"outcome": "cancelled"}]
    assert [(m["role"], m.get("content")) for m in lines[-1]["messages"][:2]] == [
        ("user", "Search slowly"),
        ("assistant", "Let me look."),
    ]
    assert [(t["status"], t["answer"]) for t in stored] == [("stopped", "Let me look.")]


async def test_a_paused_research_is_an_interrupt_and_the_next_run_resumes_it(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily, client_script: Path
) -> None:
    asked = "Which region and which years?"
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode(), clarify=asked)
    spec = {
        "threadId": "t-deep",
        "runs": [{"message": QUESTION}, {"answer": "Europe, 2020 to 2024"}],
    }
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        async with run_client(client_script, url_of(client, "deep"), spec) as node:
            lines = await node.finish()
        stored = await history(client, "t-deep")

    assert node.of("error") == []
    first, second = node.of("finished")
    assert first["outcome"] == "interrupt"
    (interrupt,) = first["interrupts"]
    assert (interrupt["reason"], interrupt["message"]) == ("input_required", asked)
    assert second["outcome"] == "success"
    events = node.of("event")
    runs = [i for i, e in enumerate(events) if e["type"] == "RUN_STARTED"]
    assert len(runs) == 2
    resumed = events[runs[1] :]
    kinds = Counter(e["type"] for e in resumed)
    assert kinds["STEP_STARTED"] == kinds["STEP_FINISHED"] == 2
    snapshot = next(e for e in resumed if e["type"] == "STATE_SNAPSHOT")
    assert [t["title"] for t in snapshot["snapshot"]["plan"]["tasks"]] == [
        "Market size",
        "Running costs",
    ]
    # The client's state follows the deltas: every task done by the end.
    plan = lines[-1]["state"]["plan"]
    assert [t["status"] for t in plan["tasks"]] == ["completed", "completed"]
    assert [(t["question"], t["status"]) for t in stored] == [
        (QUESTION, "paused"),
        ("Europe, 2020 to 2024", "completed"),
    ]


async def read_ag_ui(response: httpx.Response, until: str) -> tuple[list[dict[str, Any]], int]:
    """AG-UI events up to the first of type `until`, as an EventSource reads them, and the
    last `id:` seen (what it would send as Last-Event-ID)."""
    events: list[dict[str, Any]] = []
    last_id = 0
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            last_id = int(line[4:])
        elif line.startswith("data: "):
            events.append(orjson.loads(line[6:]))
            if events[-1]["type"] == until:
                break
    return events, last_id


async def test_a_reconnect_with_last_event_id_rejoins_the_run_where_the_client_left_it(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    release = asyncio.Event()

    async def answer_once_released(request: ModelRequest) -> ModelReply:
        await release.wait()
        return ModelReply.text("Python 3.13 is out.")

    model = ScriptedModel(
        ModelReply.tool_calls(("web_search", {"query": "python 3.13"})), answer_once_released
    )
    settings = deep_settings(backend, tmp_path, fake_search)
    body = {
        "threadId": "t-again",
        "runId": "r-1",
        "messages": [{"id": "u-1", "role": "user", "content": "What is new?"}],
    }
    async with running_service(settings, model=model) as client:
        async with client.stream("POST", "/ag-ui/chat", json=body) as first:
            before, last_id = await read_ag_ui(first, "TOOL_CALL_RESULT")
        release.set()
        headers = {"Last-Event-ID": str(last_id)}
        async with client.stream("POST", "/ag-ui/chat", json=body, headers=headers) as again:
            after, _ = await read_ag_ui(again, "RUN_FINISHED")
        bad = await client.post("/ag-ui/chat", json=body, headers={"Last-Event-ID": "x"})
        none = await client.post(
            "/ag-ui/chat", json={**body, "threadId": "t-none"}, headers=headers
        )

    assert event_types(before) == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
    ]
    assert event_types(after) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "CUSTOM",
        "RUN_FINISHED",
    ]
    assert "".join(e.get("delta", "") for e in after) == "Python 3.13 is out."
    assert (bad.status_code, none.status_code) == (400, 404)
    assert none.json()["code"] == 404


async def test_a_failed_turn_ends_the_client_run_with_run_error_and_is_stored(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily, client_script: Path
) -> None:
    def refuse(request: ModelRequest) -> ModelReply:
        raise ModelHTTPError(400, "bad request")

    model = ScriptedModel(ModelReply.tool_calls(("web_search", {"query": "python"})), refuse)
    settings = deep_settings(backend, tmp_path, fake_search)
    spec = {"threadId": "t-fail", "runs": [{"message": "What is new?"}]}
    async with running_service(settings, model=model) as client:
        async with run_client(client_script, url_of(client, "chat"), spec) as node:
            await node.finish()
        stored = await history(client, "t-fail")

    events = node.of("event")
    assert event_types(events)[-2:] == ["TOOL_CALL_RESULT", "RUN_ERROR"]
    assert events[-1]["code"] == "LLM_BAD_REQUEST"
    assert "bad request" not in events[-1]["message"]
    assert node.of("error") == []  # RUN_ERROR is a valid end to the client
    assert [t["status"] for t in stored] == ["failed"]
