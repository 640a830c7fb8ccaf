"""The product as a newcomer runs it: `uvicorn app.main:app` as `scripts/run` starts it.

One process, served with `scripts/run`'s command and flags on uvicorn's default
loop (uvloop), on the embedded defaults (SQLite and files under `DATA_DIR`, the
in-process task registry), talking to the fake model and search over HTTP. One
whole turn of every agent kind, the skills agent's shell really run in
bubblewrap: the suite once passed on asyncio's own loop while every served shell
call failed (`unexpected kwargs: process_group`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from app.agents.deep import prompts
from app.agents.host import SYSTEM_PROMPT
from app.tools.shell import ShellLimits
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import process_env
from tests.support.decks import STEP_PROMPTS, DeckModel
from tests.support.polling import eventually
from tests.support.processes import ServiceProcess
from tests.support.sandbox import sandboxed_shell
from tests.support.sse import Event, collect, text_of

Body = dict[str, Any]

SLIDES = ["Solar power", "How it works", "What it costs", "Questions"]
REPORT = "Heat pumps cut running costs [1]."
PLAN = {"tasks": [{"id": "a", "title": "Heat pump costs", "dependsOn": []}]}
HOST_PROMPT = SYSTEM_PROMPT.split("{")[0]
SHELL_COMMAND = "echo served-$((6 * 7)) in $(pwd)"


class ServedModel:
    """The fake model's side of one turn of any agent kind, told apart by prompt and tools."""

    def __init__(self) -> None:
        self.decks = DeckModel(titles=SLIDES)

    def __call__(self, body: Body) -> Reply:
        messages: list[Body] = body["messages"]
        system = str(messages[0]["content"]) if messages[0]["role"] == "system" else ""
        tools = [tool["function"]["name"] for tool in body.get("tools", [])]
        results = [str(m["content"]) for m in messages if m["role"] == "tool"]
        if any(system.startswith(opening) for opening in STEP_PROMPTS.values()):
            return self.decks(body)
        if system.startswith(HOST_PROMPT):
            return _once(
                results, (tools[0], {"message": "What do heat pumps cost?"}), "Via A2A: {}"
            )
        research = _research_step(system, results)
        if research is not None:
            return research
        if "bash" in tools:
            return _once(results, ("bash", {"command": SHELL_COMMAND}), "The shell said: {}")
        if "search_document" in tools:
            return _once(results, ("search_document", {"query": "warranty"}), "Per the file: {}")
        if "web_search" in tools:
            return _once(results, ("web_search", {"query": "heat pumps"}), "Found: {}")
        return Reply.text("A plain answer.")


def _once(results: list[str], call: tuple[str, Body], answer: str) -> Reply:
    """Call the tool first, then answer quoting what it returned."""
    if not results:
        return Reply.tool_calls([call])
    return Reply.text(answer.format(results[-1][:300]))


def _research_step(system: str, results: list[str]) -> Reply | None:
    def starts(prompt: str) -> bool:
        return system.startswith(prompt.split("{")[0])

    if starts(prompts.CLARIFY):
        return Reply.text('{"needClarification": false}')
    if starts(prompts.BRIEF):
        return Reply.text("Topic: heat pumps. 1. Costs")
    if starts(prompts.PLAN):
        return Reply.text(orjson.dumps(PLAN).decode())
    if starts(prompts.CRITIQUE):
        return Reply.text('{"passed": true, "feedback": ""}')
    if starts(prompts.REPORT):
        return Reply.text(REPORT)
    if starts(prompts.TASK):
        return _once(results, ("web_search", {"query": "heat pump costs"}), "Findings: {}")
    return None


@pytest.fixture
async def served(
    tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> AsyncIterator[httpx.AsyncClient]:
    """The service as `scripts/run` starts it, on its embedded defaults."""
    fake_llm.responder = ServedModel()
    process = ServiceProcess(
        "served",
        tmp_path,
        {
            **process_env(fake_llm, fake_search),
            "PPTX_PREVIEWS": "false",
            "PPTX_PDF": "false",
        },
    )
    # The host agent's remote agent is this same service, over A2A on loopback.
    # Its card is read once the service listens: at the first refresh after start-up.
    process.env.update(
        A2A_AGENTS=process.url, OUTBOUND_ALLOWLIST="127.0.0.1", A2A_REFRESH_SECONDS="0.2"
    )
    await process.start()
    try:
        async with httpx.AsyncClient(base_url=process.url, timeout=60) as client:

            async def host_available() -> bool:
                kinds = (await client.get("/agent/kinds")).json()["data"]
                return any(k["kind"] == "host" and k["available"] for k in kinds)

            await eventually(host_available, what="the host agent's remote agent")
            yield client
    finally:
        await process.stop()


async def turn(client: httpx.AsyncClient, kind: str, query: str, **fields: str) -> list[Event]:
    params = {"query": query, "conversationId": f"served-{kind}", **fields}
    async with client.stream("GET", f"/agent/{kind}/stream", params=params) as response:
        assert response.status_code == 200, await response.aread()
        return await collect(response)


def ended(events: list[Event]) -> str:
    [complete] = [e for e in events if e["type"] == "complete"]
    errors = [e for e in events if e["type"] == "error"]
    assert not errors, errors
    return str(complete["status"])


async def test_the_served_skills_agent_runs_its_shell_in_the_sandbox(
    served: httpx.AsyncClient,
) -> None:
    sandboxed_shell(ShellLimits.defaults())  # skips, saying why, where bubblewrap cannot run

    events = await turn(served, "skills", "Run a command for me")

    assert ended(events) == "completed"
    answer = text_of(events)
    assert "served-42 in /workspace" in answer, answer
    assert "process_group" not in answer


async def test_every_agent_kind_completes_a_turn_as_served(
    served: httpx.AsyncClient, tmp_path: Path
) -> None:
    upload = await served.post(
        "/file/upload",
        files={"file": ("manual.txt", b"The warranty lasts five years from the date of purchase.")},
    )
    assert upload.status_code == 200, upload.text
    file_id = upload.json()["data"]["fileId"]

    chat = await turn(served, "chat", "What do heat pumps cost?")
    document = await turn(served, "file", "How long is the warranty?", fileId=file_id)
    research = await turn(served, "deep", "Research heat pump costs")
    deck = await turn(served, "pptx", "A deck on solar power for students, 4 slides")
    host = await turn(served, "host", "Ask another agent about heat pumps")

    outcomes = [ended(chat), ended(document), ended(research), ended(deck), ended(host)]
    assert outcomes == ["completed"] * 5
    assert text_of(host).startswith("Via A2A: Found: ")
    assert text_of(chat).startswith("Found: ")
    assert "five years" in text_of(document)
    assert REPORT in text_of(research)
    [made] = [e for e in deck if e["type"] == "file"]
    assert re.search(r"\.pptx$", made["name"])
    download = await served.get(made["url"])
    assert download.status_code == 200
    assert download.content.startswith(b"PK")
