"""The web-search agent end to end: real app, real HTTP, fake model and search servers.

Each test runs twice: on the embedded defaults (SQLite, in-process tasks) and
on the production pair (PostgreSQL, Redis).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import (
    TEST_LLM_KEY,
    Backend,
    ask,
    history,
    running_service,
    service_settings,
    settings_for,
    settings_with_search,
)
from tests.support.sse import collect, events, text_of, types


async def test_full_turn_searches_answers_and_is_stored(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "python 3.13"})], fragments=5),
        Reply.text("Python 3.13 is out [1].", chunks=4),
        Reply.text('{"questions": ["What changed?", "Is it faster?", "How to upgrade?"]}'),
    )
    settings = settings_for(
        backend,
        tmp_path,
        fake_llm,
        tavily_api_key="tvly-test",
        tavily_base_url=fake_search.base_url,
        recommendations_enabled=True,
    )
    async with running_service(settings) as client:
        evts = await ask(client, "What is new in Python?", "conv-1")
        stored = await history(client, "conv-1")

    assert types(evts) == [
        "start",
        "thinking",
        "tool_start",
        "tool_end",
        "text",
        "reference",
        "recommend",
        "complete",
    ]
    assert [e["_id"] for e in evts] == list(range(1, len(evts) + 1))
    assert evts[0]["conversationId"] == "conv-1"
    assert evts[1]["content"] == "Searching the web: python 3.13\n"
    tool_start = next(e for e in evts if e["type"] == "tool_start")
    tool_end = next(e for e in evts if e["type"] == "tool_end")
    assert tool_start["toolCallId"] == tool_end["toolCallId"]
    assert orjson.loads(tool_start["arguments"]) == {"query": "python 3.13"}
    assert "Facts about python 3.13" in tool_end["result"]
    assert text_of(evts) == "Python 3.13 is out [1]."
    refs = orjson.loads(next(e for e in evts if e["type"] == "reference")["content"])
    assert [r["url"] for r in refs] == [
        "https://example.test/python-3.13/1",
        "https://example.test/python-3.13/2",
    ]
    complete = evts[-1]
    assert complete["status"] == "completed"
    assert complete["tools"] == ["web_search"]
    assert complete["usage"]["promptTokens"] > 0
    assert fake_search.queries == ["python 3.13"]
    assert fake_search.auth_headers == ["Bearer tvly-test"]

    (turn,) = stored
    assert turn["id"] == evts[0]["sessionId"]
    assert turn["question"] == "What is new in Python?"
    assert turn["answer"] == "Python 3.13 is out [1]."
    assert turn["status"] == "completed"
    assert turn["reference"] == refs
    assert turn["recommend"] == ["What changed?", "Is it faster?", "How to upgrade?"]
    assert [t["name"] for t in turn["tools"]] == ["web_search"]
    assert turn["totalResponseTime"] >= turn["firstResponseTime"] >= 0

    # The model saw the tool result and the key went only in the Authorization header.
    second_request = fake_llm.requests[1]
    assert second_request["messages"][-1]["role"] == "tool"
    assert "Facts about python 3.13" in second_request["messages"][-1]["content"]
    assert fake_llm.headers[0]["authorization"] == f"Bearer {TEST_LLM_KEY}"


async def test_second_turn_sends_the_first_as_memory(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Paris is the capital."), Reply.text("About 2.1 million."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        await ask(client, "Capital of France?", "conv-mem")
        second = await ask(client, "How many people live there?", "conv-mem")
        stored = await history(client, "conv-mem")

    assert second[-1]["status"] == "completed"
    sent = [(m["role"], m["content"]) for m in fake_llm.requests[1]["messages"][1:]]
    assert sent == [
        ("user", "Capital of France?"),
        ("assistant", "Paris is the capital."),
        ("user", "How many people live there?"),
    ]
    assert [t["answer"] for t in stored] == ["Paris is the capital.", "About 2.1 million."]


async def test_usage_totals_every_model_call_of_the_turn_follow_ups_included(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "tea"})], usage=(100, 10)),
        Reply.text("Tea is a drink [1].", usage=(200, 20)),
        Reply.text('{"questions": ["Green?", "Black?", "Oolong?"]}', usage=(50, 5)),
    )
    settings = settings_with_search(
        backend, tmp_path, fake_llm, fake_search, recommendations_enabled=True
    )
    async with running_service(settings) as client:
        evts = await ask(client, "What is tea?", "c-usage")
        stored = await history(client, "c-usage")

    assert "recommend" in types(evts)
    assert evts[-1]["usage"] == {
        "promptTokens": 350,
        "completionTokens": 35,
        "estimated": False,
        "model": "default",
    }
    assert (stored[0]["promptTokens"], stored[0]["completionTokens"]) == (350, 35)


async def test_each_search_is_announced_before_its_tool_start(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "rust"}), ("web_search", {"query": "go"})]),
        Reply.text("Both."),
    )
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search)
    async with running_service(settings) as client:
        evts = await ask(client, "Rust or Go?", "c-order")

    progress = [
        (e["type"], e.get("content") or orjson.loads(e["arguments"])["query"])
        for e in evts
        if e["type"] in ("thinking", "tool_start")
    ]
    assert progress == [
        ("thinking", "Searching the web: rust\n"),
        ("tool_start", "rust"),
        ("thinking", "Searching the web: go\n"),
        ("tool_start", "go"),
    ]


async def test_stop_mid_stream_stores_the_partial_answer(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial ans"), Reply.text("Fresh answer."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        async with client.stream(
            "GET", "/agent/chat/stream", params={"query": "Long one", "conversationId": "c-stop"}
        ) as response:
            seen: list[dict[str, Any]] = []
            async for event in events(response):
                seen.append(event)
                if event["type"] == "text":
                    busy = await client.get(
                        "/agent/chat/stream", params={"query": "again", "conversationId": "c-stop"}
                    )
                    assert busy.status_code == 409
                    assert busy.json()["code"] == 409
                    stop = await client.get("/agent/stop", params={"conversationId": "c-stop"})
                    assert stop.json() == {"success": True, "message": "The task was stopped"}
        assert fake_llm.disconnected.is_set()
        again = await client.get("/agent/stop", params={"conversationId": "c-stop"})
        assert again.json()["success"] is False
        # The conversation is free at once.
        follow_up = await ask(client, "Next question", "c-stop")
        stored = await history(client, "c-stop")

    assert seen[-1]["type"] == "complete"
    assert seen[-1]["status"] == "stopped"
    assert follow_up[-1]["status"] == "completed"
    assert [(t["status"], t["answer"]) for t in stored] == [
        ("stopped", "Partial ans"),
        ("completed", "Fresh answer."),
    ]
    # The cut call reported no usage: its prompt and the text received are counted.
    usage = seen[-1]["usage"]
    assert usage["promptTokens"] > 0
    assert usage["completionTokens"] > 0
    assert usage["estimated"] is True
    assert (stored[0]["promptTokens"], stored[0]["completionTokens"]) == (
        usage["promptTokens"],
        usage["completionTokens"],
    )


async def test_stop_during_a_tool_call_cancels_the_tool(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_search.hang = True
    fake_llm.script(Reply.tool_calls([("web_search", {"query": "slow"})]))
    settings = settings_for(
        backend,
        tmp_path,
        fake_llm,
        tavily_api_key="tvly-test",
        tavily_base_url=fake_search.base_url,
    )
    async with running_service(settings) as client:
        async with client.stream(
            "GET", "/agent/chat/stream", params={"query": "Search", "conversationId": "c-tool"}
        ) as response:
            seen = []
            async for event in events(response):
                seen.append(event)
                if event["type"] == "tool_start":
                    await fake_search.started.wait()
                    stop = await client.get("/agent/stop", params={"conversationId": "c-tool"})
                    assert stop.json()["success"] is True
        stored = await history(client, "c-tool")
        async with asyncio.timeout(10):
            await fake_search.disconnected.wait()

    assert seen[-1]["status"] == "stopped"
    assert len(fake_llm.requests) == 1
    assert stored[0]["status"] == "stopped"


async def test_upstream_429_is_retried_then_answers(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.error(429, retry_after=0), Reply.text("Made it."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        evts = await ask(client, "Hello", "c-429")
        stored = await history(client, "c-429")

    assert types(evts) == ["start", "thinking", "error", "text", "complete"]
    assert evts[2]["code"] == "RETRYING"
    assert evts[-1]["status"] == "completed"
    assert stored[0]["answer"] == "Made it."


async def test_upstream_failing_for_good_fails_the_turn(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(*(Reply.error(503) for _ in range(3)))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        evts = await ask(client, "Hello", "c-500")
        stored = await history(client, "c-500")

    assert types(evts) == ["start", "thinking", "error", "error", "error", "complete"]
    assert [e["code"] for e in evts if e["type"] == "error"] == [
        "RETRYING",
        "RETRYING",
        "LLM_UNAVAILABLE",
    ]
    assert evts[-1]["status"] == "failed"
    assert TEST_LLM_KEY not in orjson.dumps(evts).decode()
    assert stored[0]["status"] == "failed"
    assert stored[0]["error"] == "LLM_UNAVAILABLE"
    # The history says it in the words the stream said it in.
    assert stored[0]["errorMessage"] == evts[-2]["message"]


async def test_a_client_that_disconnects_does_not_lose_the_answer(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("one two three four five six", chunks=6, delay=0.05))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        async with client.stream(
            "GET", "/agent/chat/stream", params={"query": "Count", "conversationId": "c-drop"}
        ) as response:
            async for event in events(response):
                if event["type"] == "text":
                    last_seen = event["_id"]
                    break
        # Gone. The run goes on; a resume from the last seen id follows it to the end.
        async with client.stream(
            "GET",
            "/agent/resume",
            params={"conversationId": "c-drop"},
            headers={"Last-Event-ID": str(last_seen)},
        ) as response:
            rest = await collect(response)
        stored = await history(client, "c-drop")

    assert rest[0]["_id"] == last_seen + 1
    assert rest[-1]["status"] == "completed"
    assert stored[0]["status"] == "completed"
    assert stored[0]["answer"] == "one two three four five six"


async def test_without_a_model_the_stream_says_so(backend: Backend, tmp_path: Path) -> None:
    settings = service_settings(
        tmp_path,
        backend.database_url,
        backend.redis_url,
        redis_prefix=backend.redis_prefix,
        llm_api_key="",
        llm_base_url="",
    )
    async with running_service(settings) as client:
        assert (await client.get("/health")).json() == {"status": "ok"}
        evts = await ask(client, "Hello", "c-nollm")

    assert types(evts) == ["start", "thinking", "error", "complete"]
    assert evts[2]["code"] == "LLM_NOT_CONFIGURED"
    assert evts[-1]["status"] == "failed"


async def test_without_a_search_key_the_agent_answers_from_the_model(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("From memory."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        evts = await ask(client, "Hello", "c-nosearch")

    assert types(evts) == ["start", "thinking", "text", "complete"]
    assert "not configured" in text_of(evts, "thinking")
    # No search; a page the user names can still be read, and the user's memory kept.
    tools = [t["function"]["name"] for t in fake_llm.requests[0]["tools"]]
    assert tools == ["fetch_page", "remember"]


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"conversationId": "c1"}, 400, "query"),
        ({"query": "   ", "conversationId": "c1"}, 400, "query"),
        ({"query": "hi", "conversationId": "bad id!"}, 400, "conversationId"),
        ({"query": "x" * 101, "conversationId": "c1"}, 413, "longer"),
    ],
)
async def test_bad_input_is_refused_and_nothing_is_written(
    backend: Backend,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    params: dict[str, str],
    status: int,
    message: str,
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, query_max_chars=100)
    async with running_service(settings) as client:
        response = await client.get("/agent/chat/stream", params=params)
        listing = await client.get("/session/list")

    assert response.status_code == status
    body = response.json()
    assert body["code"] == status
    assert message in body["message"]
    assert listing.json()["data"]["total"] == 0
    assert fake_llm.requests == []


async def test_post_takes_the_same_fields_as_json(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Posted."))
    async with (
        running_service(settings_for(backend, tmp_path, fake_llm)) as client,
        client.stream(
            "POST", "/agent/chat/stream", json={"query": "Hi", "conversationId": "c-post"}
        ) as response,
    ):
        evts = await collect(response)

    assert text_of(evts) == "Posted."


@pytest.mark.parametrize("where", ["params", "json"])
async def test_post_stream_and_stop_take_fields_from_the_query_string_or_the_body(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, where: str
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial"))
    ask_fields: dict[str, Any] = {where: {"query": "Hi", "conversationId": "c-p"}}
    stop_fields: dict[str, Any] = {where: {"conversationId": "c-p"}}
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        async with client.stream("POST", "/agent/chat/stream", **ask_fields) as response:
            seen = []
            async for event in events(response):
                seen.append(event)
                if event["type"] == "text":
                    stop = await client.post("/agent/stop", **stop_fields)
        missing = await client.post("/agent/stop")

    assert stop.json() == {"success": True, "message": "The task was stopped"}
    assert seen[-1]["status"] == "stopped"
    assert missing.status_code == 400
    assert "conversationId" in missing.json()["message"]


async def test_users_see_only_their_own_conversations(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, api_keys="key-a:alice,key-b:bob")
    alice = {"Authorization": "Bearer key-a"}
    bob = {"Authorization": "Bearer key-b"}
    fake_llm.script(Reply.text("Alice's answer."))
    async with running_service(settings) as client:
        assert (await client.get("/session/list")).status_code == 401
        async with client.stream(
            "GET",
            "/agent/chat/stream",
            params={"query": "Mine", "conversationId": "c-alice", "access_token": "key-a"},
        ) as response:
            await collect(response)

        assert (await client.get("/session/c-alice", headers=bob)).status_code == 404
        assert (await client.delete("/session/c-alice", headers=bob)).status_code == 404
        bob_list = (await client.get("/session/list", headers=bob)).json()["data"]
        alice_list = (await client.get("/session/list", headers=alice)).json()["data"]
        stop = await client.get("/agent/stop", params={"conversationId": "c-alice"}, headers=bob)
        assert (await client.get("/session/c-alice", headers=alice)).status_code == 200
        deleted = await client.delete("/session/c-alice", headers=alice)
        assert (await client.get("/session/c-alice", headers=alice)).status_code == 404

    assert bob_list["total"] == 0
    assert [r["conversationId"] for r in alice_list["records"]] == ["c-alice"]
    assert stop.json()["success"] is False
    assert deleted.json()["code"] == 200


async def test_history_lists_conversations_newest_first_with_paging(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        for conversation in ("c-a", "c-b", "c-c"):
            await ask(client, f"First in {conversation}", conversation)
        await ask(client, "Second in c-a", "c-a")
        first_page = (await client.get("/session/list?pageNum=1&pageSize=2")).json()["data"]
        second_page = (await client.get("/session/list?pageNum=2&pageSize=2")).json()["data"]

    assert first_page["total"] == 3
    assert [r["conversationId"] for r in first_page["records"]] == ["c-a", "c-c"]
    assert first_page["records"][0]["question"] == "First in c-a"
    assert first_page["records"][0]["agentType"] == "chat"
    assert [r["conversationId"] for r in second_page["records"]] == ["c-b"]


async def test_ready_reports_its_dependencies(backend: Backend, tmp_path: Path) -> None:
    settings = service_settings(
        tmp_path, backend.database_url, backend.redis_url, redis_prefix=backend.redis_prefix
    )
    async with running_service(settings) as client:
        response = await client.get("/ready")

    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "tasks": "ok"}


async def test_concurrent_conversations_do_not_block_each_other(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        results = await asyncio.gather(*(ask(client, "Hi", f"c-par-{n}") for n in range(8)))

    assert all(r[-1]["status"] == "completed" for r in results)
