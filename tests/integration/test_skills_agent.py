"""The skills agent as a user meets it: a skill followed in the sandbox produces a file to download.

The end-to-end tests go through the HTTP API and the real registry entry,
the others drive the agent in-process; both on a `ScriptedModel`, whose
steps look at what the model was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import docx
import httpx
import pytest

from app.agents.skills_agent import SkillsAgent, build
from app.agents.turn import AgentCore, Turn
from app.config import Settings
from app.core.events import CompleteEvent, Event, FileEvent, ThinkingEvent
from app.core.messages import ToolResultBlock
from app.core.run import ConversationKey
from app.factory import create_app
from app.llm.errors import ModelHTTPError
from app.tools.shell import Shell, ShellLimits
from app.tools.workspace import Workspace, workspace_root
from tests.integration.service import (
    Backend,
    history,
    service_settings,
)
from tests.integration.service import ask as ask_agent
from tests.support.agents import agent_core, run_turn
from tests.support.sandbox import marked, sandboxed_shell
from tests.support.scripted_model import ModelRequest, Reply, ScriptedModel
from tests.support.server import serve
from tests.support.sse import events

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
SALES = b"region,units\nNorth,12\nSouth,7\nNorth,3\n"
SUMMARY_AND_REPORT = (
    "python /skills/data-summary/scripts/summarize_table.py sales.csv --out tmp/summary.md"
    " && python /skills/docx-report/scripts/markdown_to_docx.py tmp/summary.md"
    " 'Sales summary.docx'"
)


async def stream(
    client: httpx.AsyncClient, query: str, conversation: str, file_id: str
) -> list[dict[str, object]]:
    return await ask_agent(client, query, conversation, "skills", file_id)


def app_settings(backend: Backend, tmp_path: Path) -> Settings:
    return service_settings(
        tmp_path, backend.database_url, backend.redis_url, redis_prefix=backend.redis_prefix
    )


@contextlib.asynccontextmanager
async def service(settings: Settings, model: ScriptedModel) -> AsyncIterator[httpx.AsyncClient]:
    """The whole app on a real socket, its model scripted."""
    async with (
        serve(create_app(settings, model=model)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        yield client


async def test_a_skill_followed_in_the_sandbox_makes_a_docx_the_user_downloads(
    backend: Backend, tmp_path: Path
) -> None:
    sandboxed_shell(ShellLimits.defaults())  # skips (fails under CI) without bubblewrap

    def load_the_listed_skill(request: ModelRequest) -> Reply:
        system = request.messages[0].text_content()
        assert "- data-summary: Summarise a table of data" in system
        assert "it is in the workspace as `sales.csv`" in system
        return Reply.tool_calls(("load_skill", {"name": "data-summary"}))

    def follow_it(request: ModelRequest) -> Reply:
        assert "summarize_table.py" in request.tool_results()[-1].output
        return Reply.tool_calls(("bash", {"command": SUMMARY_AND_REPORT}))

    model = ScriptedModel(
        load_the_listed_skill,
        follow_it,
        Reply.text("Your report is ready: a summary of the two regions."),
    )
    settings = app_settings(backend, tmp_path)
    async with service(settings, model) as client:
        upload = await client.post("/file/upload", files={"file": ("sales.csv", SALES)})
        file_id = upload.json()["data"]["fileId"]
        events = await stream(client, "Turn my data into a Word report", "c-skills", file_id)
        [file_event] = [e for e in events if e["type"] == "file"]
        download = await client.get(str(file_event["url"]))
        [stored] = await history(client, "c-skills")
        workspace = workspace_root(settings.data_dir, "local", "c-skills")
        existed = workspace.is_dir()
        deleted = await client.delete("/session/c-skills")

    kinds = [e["type"] for e in events]
    assert kinds[0] == "start"
    assert kinds[-1] == "complete"
    assert events[-1]["status"] == "completed"
    assert [e["toolName"] for e in events if e["type"] == "tool_end"] == ["load_skill", "bash"]
    assert all(e["isError"] is False for e in events if e["type"] == "tool_end")
    thinking = "".join(str(e["content"]) for e in events if e["type"] == "thinking")
    assert "Copied sales.csv into the workspace" in thinking
    assert "Loading the skill data-summary" in thinking
    assert "Running: python /skills/data-summary/scripts/summarize_table.py" in thinking
    assert file_event["name"] == "Sales summary.docx"
    assert file_event["mimeType"] == DOCX_MIME
    answer = "".join(str(e["content"]) for e in events if e["type"] == "text")
    assert f"[Sales summary.docx]({file_event['url']})" in answer
    assert stored["answer"] == answer
    assert [f["name"] for f in stored["files"]] == ["Sales summary.docx"]
    assert download.status_code == 200
    report = docx.Document(io.BytesIO(download.content))
    assert report.paragraphs[0].text == "Summary of sales.csv"
    assert any("3 rows, 2 columns." in p.text for p in report.paragraphs)
    assert existed
    assert deleted.status_code == 200
    assert not workspace.exists()
    assert not Workspace(workspace, 0).record.exists()


async def test_a_stop_during_a_command_kills_it_and_ends_the_turn_at_once(
    backend: Backend, tmp_path: Path
) -> None:
    shell = sandboxed_shell(ShellLimits.defaults())
    settings = app_settings(backend, tmp_path)
    marker = f"dodo-agent-stop-{uuid.uuid4().hex[:8]}"
    workspace = Workspace(workspace_root(settings.data_dir, "local", "c-stop"), 1024, shell.run_as)
    workspace.create()
    fifo = workspace.root / "started"
    os.mkfifo(fifo)
    workspace.give(fifo)
    command = (
        "python -c \"open('started', 'w').write('1'); import time; time.sleep(1000)\""
        f" {marker} & sleep 1000"
    )
    model = ScriptedModel(Reply.tool_calls(("bash", {"command": command})))
    seen: list[dict[str, object]] = []
    async with service(settings, model) as client:
        params = {"query": "Work for a long time", "conversationId": "c-stop"}
        async with client.stream("GET", "/agent/skills/stream", params=params) as response:
            async for event in events(response):
                seen.append(event)
                if event["type"] == "tool_start":
                    await asyncio.to_thread(fifo.read_text)
                    assert marked(marker), "the command never started"
                    stop = await client.get("/agent/stop", params={"conversationId": "c-stop"})
                    stopped = time.monotonic()
        ended = time.monotonic()
        [stored] = await history(client, "c-stop")

    assert stop.json()["success"] is True
    assert seen[-1]["status"] == "stopped"
    # Not the command's 120 s limit; the shell's own test holds the kill to a second, this one
    # also counts the stop's round trip and storing the turn, on a loaded machine.
    assert ended - stopped < 5.0
    assert marked(marker) == []
    assert stored["status"] == "stopped"
    assert stored["tools"][0]["name"] == "bash"


@pytest.fixture
async def core(tmp_path: Path, sqlite_url: str) -> AsyncIterator[AgentCore]:
    """What the lifespan gives agents, on SQLite; each test puts its scripted model in."""
    async with agent_core(service_settings(tmp_path, sqlite_url), ScriptedModel()) as made:
        yield made


def skills_settings(tmp_path: Path, **overrides: Any) -> Settings:
    return service_settings(tmp_path, "sqlite+aiosqlite://", **overrides)


def ask(question: str) -> Turn:
    return Turn(ConversationKey("u1", "c1"), question, "t1")


def without_skills(core: AgentCore, tmp_path: Path, shell: Shell) -> SkillsAgent:
    """The agent as a deployment with no skills at all would build it."""
    return SkillsAgent(core, core.documents, {}, shell, tmp_path / "data", 1024 * 1024)


def status(events: list[Event]) -> str:
    complete = events[-1]
    assert isinstance(complete, CompleteEvent)
    return complete.status


def thinking(events: list[Event]) -> str:
    return "".join(e.content for e in events if isinstance(e, ThinkingEvent))


async def test_with_no_skills_installed_the_agent_still_works(
    core: AgentCore, tmp_path: Path
) -> None:
    model = ScriptedModel(
        Reply.tool_calls(("write_file", {"path": "hello.md", "content": "# Hello\n"})),
        Reply.text("Done."),
    )
    core.model = model
    agent = without_skills(core, tmp_path, build(core, skills_settings(tmp_path)).shell)

    events = await run_turn(agent, "Write a hello file")

    first = model.requests[0]
    assert "No skills are installed" in first.messages[0].text_content()
    assert "load_skill" not in first.tool_names
    assert {"read_file", "write_file", "edit_file", "bash", "glob", "grep"} <= set(first.tool_names)
    assert [e.name for e in events if isinstance(e, FileEvent)] == ["hello.md"]
    assert status(events) == "completed"


async def test_the_workspace_is_kept_across_turns_and_only_new_work_is_handed_over(
    core: AgentCore, tmp_path: Path
) -> None:
    def reads_the_notes(request: ModelRequest) -> Reply:
        assert "     1\tfirst draft" in request.tool_results()[-1].output
        return Reply.tool_calls(("write_file", {"path": "final.md", "content": "# Final\n"}))

    core.model = ScriptedModel(
        Reply.tool_calls(("write_file", {"path": "notes.md", "content": "first draft\n"})),
        Reply.text("Noted."),
        Reply.tool_calls(("read_file", {"path": "notes.md"})),
        reads_the_notes,
        Reply.text("Final version written."),
    )
    agent = build(core, skills_settings(tmp_path))

    first = await run_turn(agent, "Draft some notes")
    second = await run_turn(agent, "Now write the final version")

    assert [e.name for e in first if isinstance(e, FileEvent)] == ["notes.md"]
    assert [e.name for e in second if isinstance(e, FileEvent)] == ["final.md"]


async def test_a_file_made_by_a_failed_turn_is_handed_over_by_the_next(
    core: AgentCore, tmp_path: Path
) -> None:
    def provider_fails(request: ModelRequest) -> Reply:
        raise ModelHTTPError(400, "bad request")

    core.model = ScriptedModel(
        Reply.tool_calls(("write_file", {"path": "draft.md", "content": "# Draft\n"})),
        provider_fails,
        Reply.text("Here is the draft from before."),
    )
    agent = build(core, skills_settings(tmp_path))

    failed = await run_turn(agent, "Draft it")
    next_turn = await run_turn(agent, "Where is my draft?")

    assert status(failed) == "failed"
    assert not [e for e in failed if isinstance(e, FileEvent)]
    assert [e.name for e in next_turn if isinstance(e, FileEvent)] == ["draft.md"]


async def test_web_search_is_a_tool_when_a_tavily_key_is_set(
    tmp_path: Path, sqlite_url: str
) -> None:
    offered: dict[str, list[str]] = {}
    for key in ("tvly-test", ""):
        settings = service_settings(tmp_path, sqlite_url, tavily_api_key=key)
        async with agent_core(settings, ScriptedModel()) as core:
            offered[key] = [t.schema.name for t in build(core, settings).tools(ask("Hi"))]

    assert "web_search" in offered["tvly-test"]
    assert "web_search" not in offered[""]


async def test_rounds_stop_at_skills_max_rounds_with_a_last_answer_without_tools(
    core: AgentCore, tmp_path: Path
) -> None:
    def last(request: ModelRequest) -> Reply:
        assert request.tools == []
        return Reply.text("Here is what I found.")

    model = ScriptedModel(
        Reply.tool_calls(("list_files", {})),
        Reply.tool_calls(("list_files", {})),
        last,
    )
    core.model = model
    agent = build(core, skills_settings(tmp_path, skills_max_rounds=2))

    events = await run_turn(agent, "Look around")

    assert len(model.requests) == 3
    assert model.unused_steps == 0
    assert status(events) == "completed"


async def test_old_tool_outputs_become_stubs_but_the_skill_stays(
    core: AgentCore, tmp_path: Path
) -> None:
    long_text = "line of data\n" * 200
    model = ScriptedModel(
        Reply.tool_calls(("load_skill", {"name": "pdf-extract"})),
        Reply.tool_calls(("write_file", {"path": "a.txt", "content": long_text})),
        Reply.tool_calls(("read_file", {"path": "a.txt"})),
        Reply.tool_calls(("read_file", {"path": "a.txt", "offset": 2})),
        Reply.text("Read it twice."),
    )
    core.model = model
    agent = build(core, skills_settings(tmp_path, skills_keep_tool_results=1))

    await run_turn(agent, "Read a.txt")

    results: list[ToolResultBlock] = model.requests[-1].tool_results()
    assert [r.name for r in results] == ["load_skill", "write_file", "read_file", "read_file"]
    assert "# Skill: pdf-extract" in results[0].output
    assert results[2].output.startswith("[output of read_file removed")
    assert "line of data" in results[3].output


async def test_the_shell_refusing_is_said_once_and_the_turn_goes_on(
    core: AgentCore, tmp_path: Path
) -> None:
    model = ScriptedModel(
        Reply.tool_calls(("bash", {"command": "ls"})),
        Reply.text("I could not use the shell."),
    )
    core.model = model
    agent = without_skills(
        core, tmp_path, Shell(ShellLimits.defaults(), "sandboxed", (), bwrap=None)
    )

    events = await run_turn(agent, "List the files")

    [result] = model.requests[1].tool_results()
    assert result.is_error
    assert "bubblewrap" in result.output
    assert thinking(events).startswith("No shell for this task:")
    assert status(events) == "completed"
