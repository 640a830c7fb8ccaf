"""The host agent with two instances of our own service: the host on one delegates to the
other's agents over A2A.

Each instance has its own fake model; the remote one searches with the
Tavily fake. What is checked is what a user of the host sees: the remote
agent as a tool call carrying its answer, its sources as our references,
a stop that stops the remote turn too, and a remote agent that cannot be
reached costing nothing but its tool.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import orjson
import pytest

from app.tools.a2a_client import RemoteAgents, RemoteConfig
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import (
    Backend,
    ask,
    running_service,
    settings_for,
    settings_with_search,
)
from tests.support.a2a import REPORT_BYTES, with_report_agent
from tests.support.sse import Event, events, text_of, types

TOOL = "a2a_dodo_agent"


@pytest.fixture
async def remote_llm() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@contextlib.asynccontextmanager
async def host_and_remote(
    backend: Backend,
    tmp_path: Path,
    host_llm: FakeOpenAI,
    remote_llm: FakeOpenAI,
    search: FakeTavily,
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """The remote instance, then the host, whose A2A_AGENTS names it.

    The host starts once the remote has: two apps of one process migrating at
    once share Alembic's module-level context.
    """
    remote_settings = settings_with_search(backend, tmp_path / "remote", remote_llm, search)
    async with running_service(remote_settings) as remote:
        assert (await remote.get("/health")).status_code == 200
        settings = settings_for(backend, tmp_path, host_llm, a2a_agents=str(remote.base_url))
        async with running_service(settings) as host:
            yield host, remote


async def test_the_host_delegates_to_the_remote_chat_agent_and_cites_its_sources(
    backend: Backend,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    remote_llm: FakeOpenAI,
    fake_search: FakeTavily,
) -> None:
    fake_llm.script(
        Reply.tool_calls([(TOOL, {"message": "Are heat pumps efficient?", "skill": "chat"})]),
        Reply.text("Yes, says the research agent [1]."),
    )
    remote_llm.script(
        Reply.tool_calls([("web_search", {"query": "heat pumps"})]),
        Reply.text("Heat pumps are efficient [1].", chunks=3),
    )
    async with host_and_remote(backend, tmp_path, fake_llm, remote_llm, fake_search) as (
        host,
        remote,
    ):
        evts = await ask(host, "Ask the research agent about heat pumps", "c-host", "host")
        remote_conversation = remote_task(evts).split(".")[0]
        remote_turns = (await remote.get(f"/session/{remote_conversation}")).json()["data"]

    assert types(evts) == [
        "start",
        "thinking",
        "tool_start",
        "thinking",
        "tool_end",
        "text",
        "reference",
        "complete",
    ]
    assert evts[-1]["status"] == "completed"
    assert evts[0]["agentType"] == "host"
    [start] = [e for e in evts if e["type"] == "tool_start"]
    [end] = [e for e in evts if e["type"] == "tool_end"]
    assert (start["toolName"], end["toolName"]) == (TOOL, TOOL)
    assert end["result"] == "Heat pumps are efficient [1]."
    assert not end["isError"]
    thinking = text_of(evts, "thinking")
    assert "Asking dodo-agent" in thinking
    assert "dodo-agent: Calling web_search" in thinking
    refs = orjson.loads(next(e for e in evts if e["type"] == "reference")["content"])
    assert [r["url"] for r in refs] == [
        "https://example.test/heat-pumps/1",
        "https://example.test/heat-pumps/2",
    ]
    assert text_of(evts) == "Yes, says the research agent [1]."
    # The tool the host's model saw is described from the remote agent's card.
    tools = {t["function"]["name"]: t for t in fake_llm.requests[0]["tools"]}
    assert set(tools) == {TOOL, "fetch_page", "remember"}
    tool = tools[TOOL]
    assert "deep" in tool["function"]["parameters"]["properties"]["skill"]["enum"]
    assert "Deep research" in tool["function"]["description"]
    # On the remote, the delegated message is a turn like any other.
    assert remote_turns["agentType"] == "chat"
    assert [(m["question"], m["answer"], m["status"]) for m in remote_turns["messages"]] == [
        ("Are heat pumps efficient?", "Heat pumps are efficient [1].", "completed")
    ]


def remote_task(evts: list[Event]) -> str:
    """The remote task's id, as the host's thinking names it."""
    return text_of(evts, "thinking").split("dodo-agent: task ")[1].split("\n")[0]


async def read_until(stream: AsyncIterator[Event], seen: list[Event], needle: str) -> None:
    """Read until the thinking so far holds `needle`."""
    while needle not in text_of(seen, "thinking"):
        seen.append(await anext(stream))


async def test_a_stop_on_the_host_cancels_the_remote_task(
    backend: Backend,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    remote_llm: FakeOpenAI,
    fake_search: FakeTavily,
) -> None:
    fake_llm.script(Reply.tool_calls([(TOOL, {"message": "Write a long report"})]))
    remote_llm.script(Reply.hang(first_text="Partial"))
    async with host_and_remote(backend, tmp_path, fake_llm, remote_llm, fake_search) as (
        host,
        remote,
    ):
        params = {"query": "Long one", "conversationId": "c-stop"}
        async with host.stream("GET", "/agent/host/stream", params=params) as response:
            stream = events(response)
            seen: list[Event] = []
            await read_until(stream, seen, "dodo-agent: task ")
            remote_conversation = remote_task(seen).split(".")[0]
            # The remote turn is under way: its model has begun answering.
            resume = {"conversationId": remote_conversation, "lastEventId": "0"}
            async with remote.stream("GET", "/agent/resume", params=resume) as far:
                remote_events = events(far)
                remote_seen = [await anext(remote_events)]
                while remote_seen[-1]["type"] != "text":
                    remote_seen.append(await anext(remote_events))
                stopped = await host.get("/agent/stop", params={"conversationId": "c-stop"})
                remote_seen += [e async for e in remote_events]
            rest = [e async for e in stream]
        remote_turns = (await remote.get(f"/session/{remote_conversation}")).json()["data"]

    assert stopped.json()["success"] is True
    assert rest[-1]["type"] == "complete"
    assert rest[-1]["status"] == "stopped"
    assert remote_llm.disconnected.is_set()
    assert remote_seen[-1]["status"] == "stopped"
    assert [(m["status"], m["answer"]) for m in remote_turns["messages"]] == [
        ("stopped", "Partial")
    ]


async def test_an_unreachable_remote_agent_is_skipped_and_the_host_still_answers(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.script(Reply.text("From the model alone."))
    settings = settings_for(
        Backend(sqlite_url, "", ""),
        tmp_path,
        fake_llm,
        a2a_agents="http://127.0.0.1:9|sk-remote-secret",
    )
    async with running_service(settings) as host:
        evts = await ask(host, "Anyone there?", "c-alone", "host")

    assert evts[-1]["status"] == "completed"
    assert "No remote agent is reachable" in text_of(evts, "thinking")
    assert text_of(evts) == "From the model alone."
    # No remote agent to ask: only the page reader is offered.
    tools = [t["function"]["name"] for t in fake_llm.requests[0]["tools"]]
    assert tools == ["fetch_page", "remember"]
    assert "A2A agent at http://127.0.0.1:9 unreachable" in caplog.text
    assert "sk-remote-secret" not in caplog.text


async def test_a_refresh_drops_a_remote_agent_that_went_away(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with contextlib.AsyncExitStack() as stack:
        remote_up = contextlib.AsyncExitStack()
        remote = await remote_up.enter_async_context(running_service(settings))
        agents = RemoteAgents([RemoteConfig(str(remote.base_url))], 3600, 10)
        await stack.enter_async_context(agents.running())
        found = [agent.tool_name for agent in agents.available()]
        skills = [skill.id for skill in agents.available()[0].card.skills]
        await remote_up.aclose()
        await agents.refresh()
        gone = agents.available()

    assert found == [TOOL]
    # The remote has no remote agents of its own, so it offers no host agent.
    assert skills == ["chat", "file", "pptx", "deep", "skills"]
    assert gone == []


async def test_a_remote_agent_behind_a_key_is_called_with_it_and_the_key_shows_nowhere(
    tmp_path: Path,
    sqlite_url: str,
    fake_llm: FakeOpenAI,
    remote_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "remote-secret-key-4242"
    fake_llm.script(
        Reply.tool_calls([(TOOL, {"message": "Hello there"})]),
        Reply.text("The remote agent said hello."),
    )
    remote_llm.script(Reply.text("Hello from behind a key."))
    backend = Backend(sqlite_url, "", "")
    remote_settings = settings_for(
        backend, tmp_path / "remote", remote_llm, api_keys=f"{secret}:host-service"
    )
    async with running_service(remote_settings) as remote:
        assert (await remote.get("/health")).status_code == 200
        settings = settings_for(
            backend, tmp_path, fake_llm, a2a_agents=f"{remote.base_url}|{secret}"
        )
        async with running_service(settings) as host:
            evts = await ask(host, "Say hello through the remote agent", "c-keyed", "host")
        unauthorised = await remote.get("/.well-known/agent-card.json")

    [end] = [e for e in evts if e["type"] == "tool_end"]
    assert end["result"] == "Hello from behind a key."
    assert evts[-1]["status"] == "completed"
    assert list(unauthorised.json()["securitySchemes"]) == ["bearer"]
    assert secret not in orjson.dumps(evts).decode()
    assert secret not in caplog.text


async def test_a_file_the_remote_agent_made_is_a_file_of_the_host_turn(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI, remote_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.tool_calls([(TOOL, {"message": "A report on heat pumps", "skill": "pptx"})]),
        Reply.text("Your report is attached."),
    )
    backend = Backend(sqlite_url, "", "")
    remote_settings = settings_for(backend, tmp_path / "remote", remote_llm)
    async with running_service(remote_settings, with_report_agent()) as remote:
        assert (await remote.get("/health")).status_code == 200
        settings = settings_for(backend, tmp_path, fake_llm, a2a_agents=str(remote.base_url))
        async with running_service(settings) as host:
            evts = await ask(host, "Get me a report", "c-file", "host")
            stored = (await host.get("/session/c-file")).json()["data"]["messages"]
        [file] = [e for e in evts if e["type"] == "file"]
        download = await remote.get(file["url"])

    assert file["name"] == "report.txt"
    assert file["url"].startswith(f"{remote.base_url}/file/download/")
    assert download.content == REPORT_BYTES
    assert [f["url"] for f in stored[0]["files"]] == [file["url"]]
    [end] = [e for e in evts if e["type"] == "tool_end"]
    assert end["result"] == "Here is the report."
