"""Our agents as MCP tools, driven by the official `mcp` client against a running service.

The tools are the available agent kinds; a call is a stored turn whose
thinking comes as progress; a generated file is a resource link that
downloads; a cancelled call stops its run (stored `stopped`); a connection
that drops leaves the run going; the API key is needed as on every surface.
Both protocol eras: `ClientSession` (the 2025 handshake, a session) and
`Client` (2026-07-28, a POST per call).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import orjson
import pytest
from mcp import Client, ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from app.agents.registry import AGENTS
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import Backend, history, running_service, settings_for
from tests.integration.test_deep_research import INDEPENDENT, QUESTION, deep_settings
from tests.integration.test_deep_research import research_service as deep_service
from tests.support.a2a import REPORT_BYTES, with_report_agent
from tests.support.polling import eventually
from tests.support.research import REPORT, Researcher
from tests.support.sse import events


@contextlib.asynccontextmanager
async def mcp_session(
    service: httpx.AsyncClient, key: str | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized session of the official client with the service's `/mcp`."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = str(service.base_url).rstrip("/") + "/mcp"
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def stored_status(service: httpx.AsyncClient, conversation: str, status: str) -> bool:
    response = await service.get(f"/session/{conversation}")
    if response.status_code != 200:
        return False
    return [m["status"] for m in response.json()["data"]["messages"]] == [status]


async def test_the_tools_are_the_available_agents_and_a_call_is_a_stored_turn(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.text("Heat pumps move heat.", reasoning="Think about pumps.\nThen answer.")
    )
    without_pptx = [entry for entry in AGENTS if entry.kind != "pptx"]
    lines: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        lines.append(message or "")

    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings, without_pptx) as service:
        async with mcp_session(service) as session:
            tools = (await session.list_tools()).tools
            result = await session.call_tool(
                "chat",
                {"query": "How do heat pumps work?", "conversationId": "c-mcp"},
                progress_callback=on_progress,
            )
        stored = await history(service, "c-mcp")

    by_name = {tool.name: tool for tool in tools}
    # pptx is left out of this service; the host agent is unavailable with no remote agents.
    assert list(by_name) == [
        "chat",
        "file",
        "deep",
        "skills",
        "list_schedules",
        "create_schedule",
    ]
    assert by_name["chat"].description == AGENTS[0].description
    assert by_name["file"].input_schema["required"] == ["query", "fileId"]
    assert "fileId" not in by_name["deep"].input_schema["properties"]
    assert not result.is_error
    assert [block.text for block in result.content if isinstance(block, types.TextContent)] == [
        "Heat pumps move heat."
    ]
    assert result.structured_content == {
        "conversationId": "c-mcp",
        "turnId": stored[0]["id"],
        "status": "completed",
    }
    assert lines == [
        f"Turn {stored[0]['id']} of conversation c-mcp",
        "Web search is not configured (no TAVILY_API_KEY): answering from the model alone.",
        "Think about pumps.",
        "Then answer.",
    ]
    assert [(m["question"], m["answer"], m["status"]) for m in stored] == [
        ("How do heat pumps work?", "Heat pumps move heat.", "completed")
    ]


async def test_a_client_schedules_a_run_and_lists_its_schedules(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as service, mcp_session(service) as session:
        project = await service.post("/projects", json={"name": "Work"})
        refused = await session.call_tool(
            "create_schedule", {"kind": "chat", "query": "News?", "rrule": "FREQ=MINUTELY"}
        )
        unknown = await session.call_tool(
            "create_schedule",
            {"kind": "chat", "query": "News?", "cron": "0 8 * * *", "projectId": "f" * 32},
        )
        made = await session.call_tool(
            "create_schedule",
            {
                "kind": "chat",
                "query": "What changed in X?",
                "cron": "0 8 * * 1-5",
                "timezone": "Europe/Paris",
                "name": "Weekday news",
                "projectId": project.json()["data"]["projectId"],
            },
        )
        listed = await session.call_tool("list_schedules", {})
        over_http = (await service.get("/schedules")).json()["data"]

    assert refused.is_error
    assert "shortest interval allowed is 15 min" in _text(refused)
    assert not made.is_error
    assert made.structured_content is not None
    assert made.structured_content["name"] == "Weekday news"
    assert made.structured_content["projectId"] == project.json()["data"]["projectId"]
    assert (unknown.is_error, _text(unknown)) == (True, "Project not found")
    assert _text(made).startswith("Scheduled: Weekday news (chat, 0 8 * * 1-5, Europe/Paris): ")
    assert listed.structured_content == {"schedules": over_http}
    assert over_http[0]["scheduleId"] == made.structured_content["scheduleId"]


async def test_a_call_continues_its_conversation_and_refusals_are_tool_errors(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("First."), Reply.text("Second."))
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as service, mcp_session(service) as session:
        first = await session.call_tool("chat", {"query": "One"})
        assert isinstance(first.structured_content, dict)
        conversation = first.structured_content["conversationId"]
        second = await session.call_tool("chat", {"query": "Two", "conversationId": conversation})
        no_file = await session.call_tool("file", {"query": "What does it say?", "fileId": "nope"})
        empty = await session.call_tool("chat", {"query": "  "})
        with pytest.raises(MCPError, match="Unknown tool"):
            await session.call_tool("nosuch", {"query": "Hi"})
        stored = await history(service, conversation)

    assert [m["answer"] for m in stored] == ["First.", "Second."]
    assert isinstance(second.structured_content, dict)
    assert second.structured_content["conversationId"] == conversation
    assert no_file.is_error
    assert "File not found" in _text(no_file)
    assert empty.is_error
    assert "query" in _text(empty)


async def test_a_generated_file_is_a_resource_link_that_downloads(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm, api_keys="ka:alice")
    async with running_service(settings, with_report_agent()) as service:
        async with mcp_session(service, "ka") as session:
            result = await session.call_tool("pptx", {"query": "A report on heat pumps"})
        links = [block for block in result.content if isinstance(block, types.ResourceLink)]
        download = await service.get(str(links[0].uri), headers={"Authorization": "Bearer ka"})

    assert _text(result) == "Here is the report."
    assert [(link.name, link.mime_type, link.size) for link in links] == [
        ("report.txt", "text/plain", len(REPORT_BYTES))
    ]
    base = str(service.base_url).rstrip("/")
    assert str(links[0].uri).startswith(f"{base}/file/download/")
    assert download.content == REPORT_BYTES


async def test_a_report_file_that_could_not_be_made_is_said_not_linked(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily, monkeypatch: pytest.MonkeyPatch
) -> None:
    nothing = tmp_path / "no-programs"
    nothing.mkdir()
    monkeypatch.setenv("PATH", str(nothing))  # no LibreOffice: the PDF cannot be made
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode())
    settings = deep_settings(
        Backend(sqlite_url, "", ""), tmp_path, fake_search, deep_report_formats="docx,pdf"
    )
    async with deep_service(settings, researcher) as service, mcp_session(service) as session:
        result = await session.call_tool("deep", {"query": QUESTION})

    links = [block for block in result.content if isinstance(block, types.ResourceLink)]
    assert [link.name.rsplit(".", 1)[1] for link in links] == ["docx"]
    assert ".pdf: No PDF was made: LibreOffice is not installed" in _text(result)
    assert not result.is_error


async def test_a_research_that_asks_is_paused_and_the_next_call_answers_it(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    asked = "Which region and which years?"
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode(), clarify=asked)
    settings = deep_settings(Backend(sqlite_url, "", ""), tmp_path, fake_search)
    async with deep_service(settings, researcher) as service, mcp_session(service) as session:
        paused = await session.call_tool("deep", {"query": QUESTION, "conversationId": "c-deep"})
        answered = await session.call_tool(
            "deep", {"query": "Europe, 2020 to 2024", "conversationId": "c-deep"}
        )
        stored = await history(service, "c-deep")

    assert isinstance(paused.structured_content, dict)
    assert paused.structured_content["status"] == "paused"
    assert _text(paused).startswith(asked)
    assert isinstance(answered.structured_content, dict)
    assert answered.structured_content["status"] == "completed"
    assert _text(answered).startswith(REPORT)
    assert [m["status"] for m in stored] == ["paused", "completed"]


async def test_a_tool_waiting_for_approval_says_so_and_a_plain_answer_declines_it(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    write = ("write_file", {"path": "notes.txt", "content": "hello"})
    fake_llm.script(Reply.tool_calls([write]), Reply.text("Fine, nothing written."))
    settings = settings_for(
        Backend(sqlite_url, "", ""), tmp_path, fake_llm, tool_approval="write_file"
    )
    async with running_service(settings) as service, mcp_session(service) as session:
        asked = await session.call_tool(
            "skills", {"query": "Write my notes", "conversationId": "c-ok"}
        )
        declined = await session.call_tool(
            "skills", {"query": "Actually, don't.", "conversationId": "c-ok"}
        )

    assert isinstance(asked.structured_content, dict)
    assert asked.structured_content["status"] == "paused"
    assert "waits for approval of write_file, which has not run" in _text(asked)
    assert _text(declined) == "Fine, nothing written."


async def first_text(service: httpx.AsyncClient, conversation: str) -> None:
    """Wait until the run has streamed some answer: what a stop must keep."""
    params, headers = {"conversationId": conversation}, {"Last-Event-ID": "0"}
    async with service.stream("GET", "/agent/resume", params=params, headers=headers) as r:
        async for event in events(r):
            if event["type"] == "text":
                return


async def test_a_cancelled_call_stops_its_run(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial"))
    started = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as service, mcp_session(service) as session:
        call = asyncio.create_task(
            session.call_tool(
                "chat",
                {"query": "Long one", "conversationId": "c-cancel"},
                progress_callback=on_progress,
            )
        )
        await started.wait()
        await first_text(service, "c-cancel")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await eventually(
            lambda: stored_status(service, "c-cancel", "stopped"), what="the stopped turn"
        )
        stored = await history(service, "c-cancel")

    assert fake_llm.disconnected.is_set()
    assert [(m["status"], m["answer"]) for m in stored] == [("stopped", "Partial")]


async def test_a_dropped_connection_leaves_the_run_going_to_the_history(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    gate = asyncio.Event()
    fake_llm.script(Reply.gated("Half", " and whole.", gate))
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as service:
        session_id = await _raw_session(service)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "chat",
                "arguments": {"query": "Long one", "conversationId": "c-drop"},
                "_meta": {"progressToken": "p1"},
            },
        }
        headers = _raw_headers(session_id)
        async with service.stream("POST", "/mcp", json=call, headers=headers) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if "notifications/progress" in line:
                    break
        # The call's stream is gone; the turn is not.
        gate.set()
        await eventually(
            lambda: stored_status(service, "c-drop", "completed"), what="the finished turn"
        )
        stored = await history(service, "c-drop")

    assert [m["answer"] for m in stored] == ["Half and whole."]


async def test_a_2026_client_calls_without_a_session_and_closing_its_stream_cancels(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    """The SDK's `Client` discovers the server and speaks 2026-07-28: a POST per call, no
    session (so any instance answers), and a closed response stream is the cancellation."""
    fake_llm.script(Reply.text("Stateless answer.", reasoning="One line."), Reply.hang("Partial"))
    started = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as service:
        url = str(service.base_url).rstrip("/") + "/mcp"
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            version = client.protocol_version
            tools = (await client.list_tools()).tools
            result = await client.call_tool("chat", {"query": "Hi", "conversationId": "c-new"})
            call = asyncio.create_task(
                client.call_tool(
                    "chat",
                    {"query": "Long one", "conversationId": "c-closed"},
                    progress_callback=on_progress,
                )
            )
            await started.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await eventually(
                lambda: stored_status(service, "c-closed", "stopped"), what="the stopped turn"
            )

    assert version == "2026-07-28"
    assert "chat" in [tool.name for tool in tools]
    assert _text(result) == "Stateless answer."
    assert isinstance(result.structured_content, dict)
    assert result.structured_content["status"] == "completed"


async def test_with_api_keys_mcp_needs_a_key_and_calls_are_the_callers(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Alice's answer."))
    settings = settings_for(
        Backend(sqlite_url, "", ""), tmp_path, fake_llm, api_keys="ka:alice,kb:bob"
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    async with running_service(settings) as service:
        anonymous = await service.post("/mcp", json=initialize, headers=_raw_headers(None))
        wrong = await service.post(
            "/mcp", json=initialize, headers=_raw_headers(None) | {"Authorization": "Bearer no"}
        )
        async with mcp_session(service, "ka") as alice:
            result = await alice.call_tool("chat", {"query": "Hi", "conversationId": "c-alice"})
        mine = await service.get("/session/c-alice", headers={"Authorization": "Bearer ka"})
        theirs = await service.get("/session/c-alice", headers={"Authorization": "Bearer kb"})

    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401
    assert _text(result) == "Alice's answer."
    assert mine.status_code == 200
    assert theirs.status_code == 404


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _raw_headers(session_id: str | None) -> dict[str, str]:
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    return headers


async def _raw_session(service: httpx.AsyncClient) -> str:
    """A session opened by hand, so its call's connection can be dropped without a cancel."""
    initialize: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    opened = await service.post("/mcp", json=initialize, headers=_raw_headers(None))
    assert opened.status_code == 200
    session_id = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    done = await service.post("/mcp", json=initialized, headers=_raw_headers(session_id))
    assert done.status_code == 202
    return session_id
