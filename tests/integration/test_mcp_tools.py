"""MCP servers' tools in the agents' turns, as a user of the HTTP API meets them.

The servers are real MCP servers written with the `mcp` package
(tests/fakes/mcp_server.py): one run by the app as a child process over
stdio, one served by uvicorn over streamable HTTP in the test. The model is
a `ScriptedModel` whose steps look at the tools it was offered and the
results it was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from app.tools.untrusted import untrusted
from tests.fakes.mcp_server import SECRET_ENV, build, fingerprint, guarded
from tests.integration.service import Backend, ask, history, running_service, service_settings
from tests.support.polling import eventually
from tests.support.processes import free_port
from tests.support.scripted_model import ModelRequest, Reply, ScriptedModel
from tests.support.server import serve
from tests.support.sse import events

ROOT = Path(__file__).resolve().parents[2]
ENV_SECRET = "mcp-env-secret-7f3a9c"
HEADER_SECRET = "mcp-header-secret-2b8e41"
LOOKUP_RESULT = "Pump P-100: warranty 7 years. Source: https://parts.example.test/P-100"


def stdio_server(name: str, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    """The fake server run by the app as `python -m tests.fakes.mcp_server`."""
    env = {SECRET_ENV: ENV_SECRET, "PYTHONPATH": str(ROOT)}
    env["FAKE_MCP_PID_FILE"] = str(tmp_path / f"{name}.pid")
    env.update(extra.pop("env", {}))
    return {
        "name": name,
        "command": sys.executable,
        "args": ["-m", "tests.fakes.mcp_server"],
        "env": env,
        "cwd": str(ROOT),
        **extra,
    }


def http_server(name: str, url: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "url": f"{url}/mcp",
        "headers": {"Authorization": f"Bearer {HEADER_SECRET}"},
        **extra,
    }


def app_settings(backend: Backend, tmp_path: Path, servers: list[Any], **extra: Any) -> Settings:
    return service_settings(
        tmp_path,
        backend.database_url,
        backend.redis_url,
        redis_prefix=backend.redis_prefix,
        mcp_servers=json.dumps(servers),
        mcp_connect_timeout_seconds=15,
        mcp_reconnect_min_seconds=0.05,
        mcp_reconnect_max_seconds=0.2,
        **extra,
    )


@contextlib.asynccontextmanager
async def mcp_http(port: int = 0) -> AsyncIterator[str]:
    """The fake server over streamable HTTP, refusing requests without the header's key."""
    app = guarded(build().streamable_http_app(), f"Bearer {HEADER_SECRET}")
    async with serve(app, port=port) as url:
        yield url


@contextlib.asynccontextmanager
async def leaves_nothing_running() -> AsyncIterator[None]:
    """Fail when a task started inside (a supervisor, a call) outlives the block."""
    before = asyncio.all_tasks()
    yield
    current = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() - before if t is not current and not t.done()]
    assert not left, f"tasks outlived the app: {left}"


def assert_stopped(pid_file: Path) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def ready(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/ready")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


async def until_status(client: httpx.AsyncClient, server: str, status: str) -> dict[str, Any]:
    """`/ready` once it shows `server` in `status`: reconnection happens in the background."""
    body: dict[str, Any] = {}

    async def reached() -> bool:
        body.update(await ready(client))
        return bool(body["mcp"][server]["status"] == status)

    await eventually(reached, within=20, what=f"{server} {status}")
    return body


def inner(marked: str) -> str:
    """What the server said, inside the untrusted-content wrapper the model reads."""
    assert marked.startswith("<untrusted-content ")
    assert marked.endswith("</untrusted-content>")
    return marked.split("\n", 1)[1].rsplit("\n", 1)[0]


def tool_ends(events: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    return [(e["toolName"], e["isError"], e["result"]) for e in events if e["type"] == "tool_end"]


def answer(events: list[dict[str, Any]]) -> str:
    return "".join(str(e["content"]) for e in events if e["type"] == "text")


async def test_a_chat_turn_calls_a_stdio_server_tool_and_answers_from_its_result(
    backend: Backend, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    def call_the_tools(request: ModelRequest) -> Reply:
        offered = {tool.name: tool for tool in request.tools}
        assert sorted(offered) == [
            "fetch_page",
            "parts__erase",
            "parts__flood",
            "parts__lookup",
            "parts__slow",
            "parts__tavily-search",
            "parts__whoami",
            "remember",
        ]
        lookup = offered["parts__lookup"]
        assert lookup.description == "The warranty of a pump, by its SKU."
        assert lookup.parameters["required"] == ["sku"]
        return Reply.tool_calls(("parts__lookup", {"sku": "P-100"}), ("parts__whoami", {}))

    def answer_from_them(request: ModelRequest) -> Reply:
        looked_up, whoami = request.tool_results()
        assert (looked_up.output, looked_up.is_error) == (
            untrusted(LOOKUP_RESULT, "parts__lookup"),
            False,
        )
        return Reply.text(
            f"The warranty: {looked_up.output.split(': ')[1]} ({inner(whoami.output)})"
        )

    model = ScriptedModel(call_the_tools, answer_from_them)
    settings = app_settings(backend, tmp_path, [stdio_server("parts", tmp_path)])
    async with leaves_nothing_running(), running_service(settings, model=model) as client:
        health = await ready(client)
        events = await ask(client, "How long is the P-100 warranty?", "c-mcp")
        [stored] = await history(client, "c-mcp")

    assert health["status"] == "ready"
    assert health["mcp"]["parts"] == {
        "status": "up",
        "transport": "stdio",
        "tools": 6,
        "since": health["mcp"]["parts"]["since"],
    }
    assert [e["toolName"] for e in events if e["type"] == "tool_start"] == [
        "parts__lookup",
        "parts__whoami",
    ]
    assert tool_ends(events) == [
        ("parts__lookup", False, untrusted(LOOKUP_RESULT, "parts__lookup")),
        ("parts__whoami", False, untrusted(f"secret={fingerprint(ENV_SECRET)}", "parts__whoami")),
    ]
    assert (
        answer(events)
        == f"The warranty: warranty 7 years. Source (secret={fingerprint(ENV_SECRET)})"
    )
    assert events[-1]["status"] == "completed"
    assert stored["answer"] == answer(events)
    assert [t["name"] for t in stored["tools"]] == ["parts__lookup", "parts__whoami"]
    # The env's secret reached the server, and nothing of it the service's log.
    assert ENV_SECRET not in caplog.text
    # Shutdown stopped the child process.
    assert_stopped(tmp_path / "parts.pid")


async def test_servers_tools_are_namespaced_and_offered_to_the_kinds_configured(
    backend: Backend, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    def call_the_http_one(request: ModelRequest) -> Reply:
        names = request.tool_names
        assert "docs__lookup" in names
        assert "parts__lookup" in names
        assert not [name for name in names if name.startswith("hidden__")]
        return Reply.tool_calls(("docs__lookup", {"sku": "Q-7"}))

    model = ScriptedModel(call_the_http_one, Reply.text("Done."))
    async with mcp_http() as url:
        servers = [
            stdio_server("parts", tmp_path),
            http_server("docs", url, agents=["chat", "deep"]),
            stdio_server("hidden", tmp_path, agents=["skills"]),
        ]
        settings = app_settings(backend, tmp_path, servers)
        async with running_service(settings, model=model) as client:
            health = await ready(client)
            events = await ask(client, "Warranty of Q-7?", "c-mcp-http")

    assert {name: s["status"] for name, s in health["mcp"].items()} == {
        "parts": "up",
        "docs": "up",
        "hidden": "up",
    }
    assert health["mcp"]["docs"]["transport"] == "http"
    assert tool_ends(events) == [
        (
            "docs__lookup",
            False,
            untrusted(
                "Pump Q-7: warranty 7 years. Source: https://parts.example.test/Q-7", "docs__lookup"
            ),
        )
    ]
    assert events[-1]["status"] == "completed"
    assert HEADER_SECRET not in caplog.text
    assert HEADER_SECRET not in json.dumps(health)


async def test_web_search_comes_from_an_mcp_server_with_its_references(
    backend: Backend, tmp_path: Path
) -> None:
    def search(request: ModelRequest) -> Reply:
        assert request.tool_names == ["web_search", "fetch_page", "remember"]
        return Reply.tool_calls(("web_search", {"query": "pump warranty"}))

    def cite(request: ModelRequest) -> Reply:
        [result] = request.tool_results()
        assert inner(result.output).startswith(
            "[1] pump warranty result 1\nURL: https://example.test/"
        )
        return Reply.text("Seven years [1].")

    model = ScriptedModel(search, cite)
    settings = app_settings(
        backend,
        tmp_path,
        [stdio_server("search", tmp_path, agents=[])],
        web_search_provider="mcp:search",
    )
    async with running_service(settings, model=model) as client:
        events = await ask(client, "How long is the pump warranty?", "c-mcp-search")
        [stored] = await history(client, "c-mcp-search")

    [reference] = [e for e in events if e["type"] == "reference"]
    urls = ["https://example.test/pump-warranty/1", "https://example.test/pump-warranty/2"]
    assert [r["url"] for r in json.loads(reference["content"])] == urls
    assert json.loads(reference["content"])[0]["content"] == "Facts about pump warranty, number 1."
    thinking = "".join(str(e["content"]) for e in events if e["type"] == "thinking")
    assert "Searching the web: pump warranty" in thinking
    assert [r["url"] for r in stored["reference"]] == urls
    assert events[-1]["status"] == "completed"


async def test_web_search_from_a_server_that_is_down_is_a_tool_error_and_the_turn_goes_on(
    backend: Backend, tmp_path: Path
) -> None:
    def search(request: ModelRequest) -> Reply:
        assert request.tool_names == ["web_search", "fetch_page", "remember"]
        return Reply.tool_calls(("web_search", {"query": "pump warranty"}))

    model = ScriptedModel(search, Reply.text("Search is down; from memory: seven years."))
    server = stdio_server("search", tmp_path, agents=[], env={"FAKE_MCP_GATE": "/nonexistent"})
    settings = app_settings(backend, tmp_path, [server], web_search_provider="mcp:search")
    async with running_service(settings, model=model) as client:
        events = await ask(client, "How long is the pump warranty?", "c-mcp-search-down")

    assert tool_ends(events) == [("web_search", True, "Web search is unavailable right now.")]
    assert not [e for e in events if e["type"] == "reference"]
    assert (events[-1]["status"], answer(events)) == (
        "completed",
        "Search is down; from memory: seven years.",
    )


async def test_a_server_that_dies_is_shown_down_its_call_errs_and_it_comes_back(
    backend: Backend, tmp_path: Path
) -> None:
    def call_it(request: ModelRequest) -> Reply:
        assert "docs__lookup" in request.tool_names
        return Reply.tool_calls(("docs__lookup", {"sku": "P-100"}))

    def say_it_failed(request: ModelRequest) -> Reply:
        [result] = request.tool_results()
        assert result.is_error
        return Reply.text("The parts catalogue is unavailable.")

    def without_it(request: ModelRequest) -> Reply:
        assert not [n for n in request.tool_names if n.startswith("docs__")]
        return Reply.text("I cannot look that up now.")

    model = ScriptedModel(call_it, say_it_failed, without_it, call_it, Reply.text("7 years."))
    port = free_port()
    settings = app_settings(backend, tmp_path, [http_server("docs", f"http://127.0.0.1:{port}")])
    async with leaves_nothing_running(), contextlib.AsyncExitStack() as mcp_server:
        await mcp_server.enter_async_context(mcp_http(port))
        async with running_service(settings, model=model) as client:
            before = await ready(client)
            await mcp_server.aclose()
            failed = await ask(client, "Warranty of P-100?", "c-mcp-dies")
            down = await ready(client)
            without = await ask(client, "And now?", "c-mcp-dies")
            await mcp_server.enter_async_context(mcp_http(port))
            up = await until_status(client, "docs", "up")
            back = await ask(client, "And now?", "c-mcp-dies")

    assert before["mcp"]["docs"]["status"] == "up"
    [(name, is_error, result)] = tool_ends(failed)
    assert (name, is_error) == ("docs__lookup", True)
    assert "unavailable" in result or "went away" in result
    assert (failed[-1]["status"], answer(failed)) == (
        "completed",
        "The parts catalogue is unavailable.",
    )
    assert down["status"] == "ready"
    assert (down["mcp"]["docs"]["status"], down["mcp"]["docs"]["tools"]) == ("down", 0)
    assert down["mcp"]["docs"]["lastError"]
    assert HEADER_SECRET not in json.dumps(down)
    assert answer(without) == "I cannot look that up now."
    assert up["mcp"]["docs"]["tools"] == 6
    assert tool_ends(back)[0][:2] == ("docs__lookup", False)
    assert answer(back) == "7 years."


async def test_a_server_that_cannot_start_is_down_and_joins_when_it_can(
    backend: Backend, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gate = tmp_path / "gate"

    def without_it(request: ModelRequest) -> Reply:
        assert not [n for n in request.tool_names if n.startswith("parts__")]
        return Reply.text("No catalogue today.")

    def with_it(request: ModelRequest) -> Reply:
        assert "parts__lookup" in request.tool_names
        return Reply.tool_calls(("parts__lookup", {"sku": "P-100"}))

    model = ScriptedModel(without_it, with_it, Reply.text("7 years."))
    server = stdio_server("parts", tmp_path, env={"FAKE_MCP_GATE": str(gate)})
    settings = app_settings(backend, tmp_path, [server])
    async with leaves_nothing_running(), running_service(settings, model=model) as client:
        down = await ready(client)
        first = await ask(client, "Warranty?", "c-mcp-gate")
        gate.touch()
        up = await until_status(client, "parts", "up")
        second = await ask(client, "Warranty?", "c-mcp-gate")

    assert down["status"] == "ready"
    assert down["mcp"]["parts"]["status"] == "down"
    assert down["mcp"]["parts"]["tools"] == 0
    assert down["mcp"]["parts"]["lastError"]
    assert ENV_SECRET not in json.dumps(down)
    assert (first[-1]["status"], answer(first)) == ("completed", "No catalogue today.")
    assert up["mcp"]["parts"]["tools"] == 6
    assert tool_ends(second) == [
        ("parts__lookup", False, untrusted(LOOKUP_RESULT, "parts__lookup"))
    ]
    assert_stopped(tmp_path / "parts.pid")
    assert ENV_SECRET not in caplog.text


async def test_a_server_refusing_the_key_is_down_with_its_status_and_no_secret_shown(
    backend: Backend, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong_key, query_key = "wrong-header-key-5d1c", "query-key-93ab07"
    async with mcp_http() as url:
        server = {
            "name": "docs",
            "url": f"{url}/mcp?token={query_key}",
            "headers": {"Authorization": f"Bearer {wrong_key}"},
        }
        settings = app_settings(backend, tmp_path, [server])
        async with running_service(settings, model=ScriptedModel()) as client:
            health = await ready(client)

    docs = health["mcp"]["docs"]
    assert (docs["status"], docs["tools"]) == ("down", 0)
    assert "HTTP 401" in docs["lastError"]
    for secret in (wrong_key, query_key):
        assert secret not in json.dumps(health)
    # Headers reach no log line at any level; a URL's query does reach the HTTP
    # libraries' own debug lines (docs/integrate/mcp.md says to put keys in headers), not ours.
    assert wrong_key not in caplog.text
    assert not [r for r in caplog.records if r.name.startswith("app") and query_key in r.message]


async def test_a_call_past_its_timeout_or_its_size_is_an_error_or_cut(
    backend: Backend, tmp_path: Path
) -> None:
    def call_both(request: ModelRequest) -> Reply:
        return Reply.tool_calls(("parts__slow", {}), ("parts__flood", {"chars": 50_000}))

    def read_them(request: ModelRequest) -> Reply:
        slow, flood = request.tool_results()
        assert (slow.is_error, slow.output) == (
            True,
            "The tool parts__slow failed: no answer within 0.5 s.",
        )
        assert inner(flood.output) == "x" * 1000 + "\n[… 49000 more characters cut]"
        return Reply.text("One was slow, one was long.")

    model = ScriptedModel(call_both, read_them)
    settings = app_settings(
        backend,
        tmp_path,
        [stdio_server("parts", tmp_path)],
        mcp_call_timeout_seconds=0.5,
        mcp_result_max_chars=1000,
    )
    async with running_service(settings, model=model) as client:
        events = await ask(client, "Try them", "c-mcp-limits")
        health = await ready(client)

    # In the order they ended: the long answer comes before the timeout.
    assert [(name, error) for name, error, _ in tool_ends(events)] == [
        ("parts__flood", False),
        ("parts__slow", True),
    ]
    assert (events[-1]["status"], answer(events)) == ("completed", "One was slow, one was long.")
    assert health["mcp"]["parts"]["status"] == "up"


async def test_a_tool_its_server_marks_destructive_waits_for_the_users_yes(
    backend: Backend, tmp_path: Path
) -> None:
    model = ScriptedModel(
        Reply.tool_calls(("parts__lookup", {"sku": "P-1"}), ("parts__erase", {"sku": "P-1"})),
        Reply.text("Erased."),
    )
    settings = app_settings(backend, tmp_path, [stdio_server("parts", tmp_path)])
    async with running_service(settings, model=model) as client:
        asked = await ask(client, "Erase P-1", "c-mcp-erase")
        [approval] = [e for e in asked if e["type"] == "approval"]
        body = {
            "conversationId": "c-mcp-erase",
            "approval": {"approvalId": approval["approvalId"], "decision": "approve"},
        }
        async with client.stream("POST", "/agent/chat/stream", json=body) as response:
            went_on = [e async for e in events(response)]

    assert [name for name, _, _ in tool_ends(asked)] == ["parts__lookup"]
    assert approval["toolName"] == "parts__erase"
    assert asked[-1]["status"] == "paused"
    assert tool_ends(went_on) == [("parts__erase", False, untrusted("Erased P-1.", "parts__erase"))]
    assert went_on[-1]["status"] == "completed"
