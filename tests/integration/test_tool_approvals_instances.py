"""A tool approval decided elsewhere: on the other instance, and after the service restarted.

The pending call is in the database, so the instance that paused the turn need
not be the one that runs it, nor still be alive. Both instances share one
PostgreSQL, one Redis and one data directory (the skills workspace).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.tools.workspace import workspace_root
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import TEST_LLM_KEY
from tests.support.processes import ServiceProcess
from tests.support.sse import Event, collect

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

WRITE = ("write_file", {"path": "notes.txt", "content": "from the other side"})


@pytest.fixture
def environment(
    tmp_path: Path, postgres_url: str, redis_url: str, redis_prefix: str, fake_llm: FakeOpenAI
) -> dict[str, str]:
    return {
        "DATABASE_URL": postgres_url,
        "REDIS_URL": redis_url,
        "REDIS_PREFIX": redis_prefix,
        "DATA_DIR": str(tmp_path / "shared-data"),
        "LLM_BASE_URL": fake_llm.base_url,
        "LLM_API_KEY": TEST_LLM_KEY,
        "LLM_MODEL": "fake-model",
        "RECOMMENDATIONS_ENABLED": "false",
        "TOOL_APPROVAL": "write_file",
        "LOG_LEVEL": "WARNING",
    }


@pytest.fixture
async def processes() -> AsyncIterator[list[ServiceProcess]]:
    started: list[ServiceProcess] = []
    try:
        yield started
    finally:
        for process in started:
            await process.stop()


async def start(
    processes: list[ServiceProcess], name: str, tmp_path: Path, env: dict[str, str]
) -> ServiceProcess:
    process = ServiceProcess(name, tmp_path, env)
    processes.append(process)
    await process.start()
    return process


async def turn(url: str, conversation: str, **fields: Any) -> tuple[int, list[Event]]:
    body = {"conversationId": conversation, **fields}
    async with (
        httpx.AsyncClient(base_url=url, timeout=20) as client,
        client.stream("POST", "/agent/skills/stream", json=body) as response,
    ):
        if response.status_code != 200:
            await response.aread()
            return response.status_code, []
        return 200, await collect(response)


def approval_of(events: list[Event]) -> dict[str, Any]:
    [approval] = [e for e in events if e["type"] == "approval"]
    return approval


async def test_a_turn_paused_on_one_instance_is_approved_on_the_other(
    tmp_path: Path,
    environment: dict[str, str],
    processes: list[ServiceProcess],
    fake_llm: FakeOpenAI,
) -> None:
    a = await start(processes, "a", tmp_path, environment)
    b = await start(processes, "b", tmp_path, environment)
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Written on b."))
    notes = workspace_root(Path(environment["DATA_DIR"]), "local", "c-two") / "notes.txt"

    _, asked = await turn(a.url, "c-two", query="Write my notes")
    approval = approval_of(asked)
    written_before = notes.exists()
    status, went_on = await turn(
        b.url, "c-two", approval={"approvalId": approval["approvalId"], "decision": "approve"}
    )
    again, _ = await turn(
        a.url, "c-two", approval={"approvalId": approval["approvalId"], "decision": "approve"}
    )

    assert asked[-1]["status"] == "paused"
    assert not written_before
    assert status == 200
    assert went_on[-1]["status"] == "completed"
    assert notes.read_text() == "from the other side"
    assert again == 409


async def test_a_paused_turn_survives_a_restart_of_the_service(
    tmp_path: Path,
    environment: dict[str, str],
    processes: list[ServiceProcess],
    fake_llm: FakeOpenAI,
) -> None:
    first = await start(processes, "first", tmp_path, environment)
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Written after the restart."))
    notes = workspace_root(Path(environment["DATA_DIR"]), "local", "c-restart") / "notes.txt"

    _, asked = await turn(first.url, "c-restart", query="Write my notes")
    approval = approval_of(asked)
    await first.kill()
    second = await start(processes, "second", tmp_path, environment)
    async with httpx.AsyncClient(base_url=second.url) as client:
        [paused] = (await client.get("/session/c-restart")).json()["data"]["messages"]
    status, went_on = await turn(
        second.url,
        "c-restart",
        approval={"approvalId": approval["approvalId"], "decision": "approve"},
    )

    assert paused["status"] == "paused"
    assert paused["pending"][0]["approvalId"] == approval["approvalId"]
    assert status == 200
    assert [e["toolName"] for e in went_on if e["type"] == "tool_end"] == ["write_file"]
    assert went_on[-1]["status"] == "completed"
    assert notes.read_text() == "from the other side"
