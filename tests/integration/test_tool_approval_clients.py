"""A tool approval answered by each real client: the AI SDK's chat (`addToolApprovalResponse`),
`@ag-ui/client` (the interrupt, then a run resuming it) and the A2A SDK (`input-required`,
then a message on the same task). Each approves a write (the file is there) and rejects one
(nothing is written, and the model reads the user's reason).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers.proto_helpers import new_data_part
from google.protobuf.json_format import MessageToDict

from app.config import Settings
from app.tools.workspace import workspace_root
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, history, running_service, settings_for
from tests.support.a2a import a2a_client, message, state_name, states
from tests.support.js_clients import JS, js_client, run_client

WRITE = ("write_file", {"path": "notes.txt", "content": "hello"})
REASON = "not in this folder"


@pytest.fixture
def settings(backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI) -> Settings:
    return settings_for(backend, tmp_path, fake_llm, tool_approval="write_file")


def notes(settings: Settings, conversation: str) -> Path:
    return workspace_root(settings.data_dir, "local", conversation) / "notes.txt"


def told(fake_llm: FakeOpenAI) -> list[str]:
    """The tool results the model read in its latest request."""
    return [str(m["content"]) for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("approved", [True, False])
async def test_the_ai_sdk_chat_answers_with_add_tool_approval_response(
    settings: Settings, fake_llm: FakeOpenAI, approved: bool
) -> None:
    js_client("ai-sdk", "ai")
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Done."))
    spec = {"chatId": "c-sdk", "text": "Write my notes", "approved": approved, "reason": REASON}
    async with running_service(settings) as client:
        api = str(client.base_url.join("/ai-sdk/skills"))
        async with run_client(JS / "ai-sdk" / "approve.mjs", api, spec) as node:
            await node.finish()
        [stored] = await history(client, "c-sdk")

    assert node.of("error") == []
    [asked] = node.of("asked")
    assert asked["toolName"] == "write_file"
    assert asked["input"] == WRITE[1]
    [messages] = node.of("messages")
    [part] = [p for p in messages[-1]["parts"] if p.get("toolCallId") == asked["toolCallId"]]
    assert stored["status"] == "completed"
    if approved:
        assert part["state"] == "output-available"
        assert notes(settings, "c-sdk").read_text() == "hello"
    else:
        assert part["state"] == "output-denied"
        assert not notes(settings, "c-sdk").exists()
        assert any(REASON in result for result in told(fake_llm))


@pytest.mark.parametrize("approved", [True, False])
async def test_the_ag_ui_client_sees_the_interrupt_and_resumes_it(
    settings: Settings, fake_llm: FakeOpenAI, approved: bool
) -> None:
    script = js_client("ag-ui", "@ag-ui/client")
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Done."))
    answer: dict[str, Any] = {"approved": approved, "reason": REASON}
    spec = {
        "threadId": "c-agui",
        "runs": [{"message": "Write my notes"}, {"answer": answer}],
    }
    async with running_service(settings) as client:
        url = str(client.base_url.join("/ag-ui/skills"))
        async with run_client(script, url, spec) as node:
            await node.finish()
        [stored] = await history(client, "c-agui")

    assert node.of("error") == []
    first, second = node.of("finished")
    assert first["outcome"] == "interrupt"
    [interrupt] = first["interrupts"]
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["metadata"]["toolName"] == "write_file"
    assert interrupt["metadata"]["arguments"] == WRITE[1]
    assert second["outcome"] == "success"
    assert stored["status"] == "completed"
    assert notes(settings, "c-agui").exists() is approved
    if not approved:
        assert any(REASON in result for result in told(fake_llm))


@pytest.mark.parametrize("approved", [True, False])
async def test_an_a2a_client_sees_input_required_and_continues_the_task(
    settings: Settings, fake_llm: FakeOpenAI, approved: bool
) -> None:
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Done."))
    async with running_service(settings) as service, a2a_client(service) as client:
        paused = [
            r async for r in client.send_message(message("Write my notes", "c-a2a", skill="skills"))
        ]
        task_id = paused[0].task.id
        request = paused[-1].status_update.status.message.parts[-1]
        asked = MessageToDict(request)["data"]
        answer = message("", "c-a2a", task_id=task_id)
        del answer.message.parts[:]
        verdict = {"decision": "approve" if approved else "reject", "message": REASON}
        answer.message.parts.append(new_data_part(verdict))
        answered = [r async for r in client.send_message(answer)]

    assert states(paused)[-1] == "input_required"
    assert asked["type"] == "approval"
    assert asked["toolName"] == "write_file"
    assert answered[0].task.id == task_id
    assert states(answered)[-1] == "completed"
    assert state_name(answered[-1].status_update.status.state) == "completed"
    assert notes(settings, "c-a2a").exists() is approved
    if not approved:
        assert any(REASON in result for result in told(fake_llm))


async def test_an_unknown_ai_sdk_approval_is_refused(settings: Settings) -> None:
    body = {
        "id": "c-none",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        "approval": {"approvalId": "apr_none", "decision": "approve"},
    }
    async with running_service(settings) as client:
        refused = await client.post("/ai-sdk/skills", json=body)
    assert refused.status_code == 409
    assert isinstance(refused, httpx.Response)
