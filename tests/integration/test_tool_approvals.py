"""Asking before acting, as a user meets it over HTTP (API.md, "Asking before acting").

The skills agent's model (the scripted fake provider) asks to write a file;
with `TOOL_APPROVAL` naming `write_file`, nothing is written until the user
decides, in a new stream: approve runs it, edit runs it with the user's
arguments, reject tells the model so, and a second decision is refused.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.agents.approvals import DECLINED
from app.tools.workspace import workspace_root
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, history, running_service, settings_for
from tests.support.sse import Event, collect

WRITE = ("write_file", {"path": "notes.txt", "content": "hello"})


def decision(approval_id: str, verdict: str, **extra: Any) -> dict[str, Any]:
    return {"approvalId": approval_id, "decision": verdict, **extra}


async def turn(
    client: httpx.AsyncClient, conversation: str, **fields: Any
) -> tuple[int, list[Event]]:
    """POST a skills stream; its status, and its events when it opened."""
    body = {"conversationId": conversation, **fields}
    async with client.stream("POST", "/agent/skills/stream", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            return response.status_code, []
        return 200, await collect(response)


def of_type(events: list[Event], kind: str) -> list[Event]:
    return [e for e in events if e["type"] == kind]


def notes(settings_dir: Path, conversation: str) -> Path:
    return workspace_root(settings_dir, "local", conversation) / "notes.txt"


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_a_write_waits_for_approval_and_runs_once_approved(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, tool_approval="write_file")
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Written."))
    async with running_service(settings) as client:
        status, asked = await turn(client, "c-approve", query="Write my notes")
        [approval] = of_type(asked, "approval")
        written_before = notes(settings.data_dir, "c-approve").exists()
        [paused] = await history(client, "c-approve")
        runs = (await client.get("/agent/runs")).json()["data"]
        status2, went_on = await turn(
            client, "c-approve", approval=decision(approval["approvalId"], "approve")
        )
        again, _ = await turn(
            client, "c-approve", approval=decision(approval["approvalId"], "approve")
        )
        [stored] = await history(client, "c-approve")

    assert status == 200
    assert approval["kind"] == "tool"
    assert approval["toolName"] == "write_file"
    assert approval["arguments"] == WRITE[1]
    assert approval["toolCallId"]
    assert asked[-1]["type"] == "complete"
    assert asked[-1]["status"] == "paused"
    assert of_type(asked, "tool_start") == []
    assert not written_before
    assert paused["status"] == "paused"
    assert paused["pending"][0]["approvalId"] == approval["approvalId"]
    assert paused["pending"][0]["toolName"] == "write_file"
    [waiting] = [r for r in runs if r["conversationId"] == "c-approve"]
    assert waiting["status"] == "paused"
    assert waiting["pending"][0]["approvalId"] == approval["approvalId"]

    assert status2 == 200
    assert went_on[0]["type"] == "start"
    assert went_on[0]["sessionId"] == paused["id"]
    assert [e["toolName"] for e in of_type(went_on, "tool_end")] == ["write_file"]
    assert went_on[-1]["status"] == "completed"
    assert (workspace_root(settings.data_dir, "local", "c-approve") / "notes.txt").read_text() == (
        "hello"
    )
    assert again == 409
    assert stored["status"] == "completed"
    assert stored["pending"] == []
    assert stored["question"] == "Write my notes"
    assert "Written." in stored["answer"]
    assert [t["name"] for t in stored["tools"]] == ["write_file"]


async def test_an_edit_runs_the_users_arguments_and_a_reject_reaches_the_model(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, tool_approval="write_file")
    fake_llm.script(
        Reply.tool_calls([WRITE]),
        Reply.text("Written, as you edited it."),
        Reply.tool_calls([WRITE]),
        Reply.text("I left it."),
    )
    async with running_service(settings) as client:
        _, asked = await turn(client, "c-edit", query="Write my notes")
        [approval] = of_type(asked, "approval")
        edited = {"path": "notes.txt", "content": "edited by me"}
        _, edit = await turn(
            client, "c-edit", approval=decision(approval["approvalId"], "edit", arguments=edited)
        )
        _, asked_again = await turn(client, "c-reject", query="Write my notes")
        [second] = of_type(asked_again, "approval")
        reason = "not into my workspace"
        _, reject = await turn(
            client,
            "c-reject",
            approval=json.dumps(decision(second["approvalId"], "reject", message=reason)),
        )

    workspace = workspace_root(settings.data_dir, "local", "c-edit")
    assert (workspace / "notes.txt").read_text() == "edited by me"
    assert edit[-1]["status"] == "completed"
    assert not notes(settings.data_dir, "c-reject").exists()
    [declined] = of_type(reject, "tool_end")
    assert declined["isError"] is True
    assert reason in declined["result"]
    assert reject[-1]["status"] == "completed"
    told = tool_results(fake_llm.requests[-1])
    assert any("Declined by the user" in r and reason in r for r in told)


async def test_a_plain_message_instead_of_a_decision_rejects_the_call_and_is_answered(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, tool_approval="write_file")
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Fine, nothing written."))
    async with running_service(settings) as client:
        _, asked = await turn(client, "c-plain", query="Write my notes")
        [approval] = of_type(asked, "approval")
        _, answered = await turn(client, "c-plain", query="Actually, don't.")
        late, _ = await turn(
            client, "c-plain", approval=decision(approval["approvalId"], "approve")
        )
        first, second = await history(client, "c-plain")

    assert answered[-1]["status"] == "completed"
    assert not notes(settings.data_dir, "c-plain").exists()
    assert late == 409
    assert first["status"] == "stopped"
    assert first["pending"] == []
    assert "Actually, don't." in first["tools"][-1]["result"]
    assert second["question"] == "Actually, don't."
    assert fake_llm.requests[-1]["messages"][-1] == {"role": "user", "content": "Actually, don't."}


async def test_a_plain_message_instead_of_a_decision_reaches_the_model_with_the_conversation(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """The model hears the question, the call it asked for, the user's refusal as that call's
    result (the message its reason), then the message."""
    settings = settings_for(backend, tmp_path, fake_llm, tool_approval="write_file")
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Fine, no file."))
    async with running_service(settings) as client:
        await turn(client, "c-never-mind", query="Write my notes")
        _, answered = await turn(client, "c-never-mind", query="Never mind the file.")

    assert answered[-1]["status"] == "completed"
    sent = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[1]["content"] == "Write my notes"
    [call] = sent[2]["tool_calls"]
    assert call["function"] == {
        "name": "write_file",
        "arguments": '{"path":"notes.txt","content":"hello"}',
    }
    assert sent[3] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": f"{DECLINED} Their reason: Never mind the file.",
    }
    assert sent[4] == {"role": "user", "content": "Never mind the file."}


async def test_tool_approval_ask_asks_for_acting_tools_only_and_auto_for_none(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    listing: tuple[str, dict[str, Any]] = ("list_files", {})
    fake_llm.script(
        Reply.tool_calls([listing, WRITE]),
        Reply.tool_calls([WRITE]),
        Reply.text("Done without asking."),
    )
    async with running_service(settings) as client:
        _, asked = await turn(client, "c-ask", query="Write", toolApproval="ask")
        _, auto = await turn(client, "c-auto", query="Write", toolApproval="auto")
        bad, _ = await turn(client, "c-bad", query="Write", toolApproval="sometimes")

    assert [e["toolName"] for e in of_type(asked, "tool_end")] == ["list_files"]
    [approval] = of_type(asked, "approval")
    assert approval["toolName"] == "write_file"
    assert auto[-1]["status"] == "completed"
    assert notes(settings.data_dir, "c-auto").read_text() == "hello"
    assert bad == 422


async def test_an_unknown_approval_is_409_and_a_malformed_one_422(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        unknown, _ = await turn(client, "c-none", approval=decision("apr_nothing", "approve"))
        no_arguments, _ = await turn(client, "c-none", approval=decision("apr_x", "edit"))
        not_json = await client.get(
            "/agent/skills/stream", params={"conversationId": "c-none", "approval": "{"}
        )
        free = await client.get("/agent/runs")

    assert unknown == 409
    assert no_arguments == 422
    assert not_json.status_code == 422
    assert free.status_code == 200


@pytest.mark.postgres
@pytest.mark.redis
async def test_two_decisions_at_once_one_wins(
    tmp_path: Path, postgres_url: str, redis_url: str, redis_prefix: str, fake_llm: FakeOpenAI
) -> None:
    backend = Backend(postgres_url, redis_url, redis_prefix)
    settings = settings_for(backend, tmp_path, fake_llm, tool_approval="write_file")
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Written."))
    async with running_service(settings) as one, running_service(settings) as two:
        _, asked = await turn(one, "c-race", query="Write my notes")
        [approval] = of_type(asked, "approval")
        answer = decision(approval["approvalId"], "approve")
        results = await asyncio.gather(
            turn(one, "c-race", approval=answer), turn(two, "c-race", approval=answer)
        )

    assert sorted(status for status, _ in results) == [200, 409]
    [(_, won)] = [r for r in results if r[0] == 200]
    assert len(of_type(won, "tool_end")) == 1


async def test_a_loaded_skills_allowed_tools_narrow_what_runs_without_asking(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    folder = tmp_path / "skills" / "read-only-notes"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: read-only-notes\ndescription: Read notes and never change them.\n"
        "allowed-tools: Read Grep\n---\n\nRead the notes; change nothing.\n"
    )
    settings = settings_for(backend, tmp_path, fake_llm, skills_dir=tmp_path / "skills")
    fake_llm.script(
        Reply.tool_calls([WRITE]),
        Reply.tool_calls([("load_skill", {"name": "read-only-notes"})]),
        Reply.tool_calls([("read_file", {"path": "notes.txt"}), WRITE]),
        Reply.text("Asked first."),
    )
    async with running_service(settings) as client:
        _, turn_events = await turn(client, "c-skill", query="Update my notes")

    ends = [(e["toolName"], e["isError"]) for e in of_type(turn_events, "tool_end")]
    assert ends == [("write_file", False), ("load_skill", False), ("read_file", False)]
    [approval] = of_type(turn_events, "approval")
    assert approval["toolName"] == "write_file"
    assert turn_events[-1]["status"] == "paused"


async def test_a_decision_sent_to_another_agent_is_refused_and_stays_to_take(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, tool_approval="write_file")
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Written."))
    async with running_service(settings) as client:
        _, asked = await turn(client, "c-kind", query="Write my notes")
        [approval] = of_type(asked, "approval")
        body = {
            "conversationId": "c-kind",
            "approval": decision(approval["approvalId"], "approve"),
        }
        elsewhere = await client.post("/agent/chat/stream", json=body)
        status, went_on = await turn(client, "c-kind", approval=body["approval"])

    assert elsewhere.status_code == 409
    assert status == 200
    assert went_on[-1]["status"] == "completed"


async def test_two_writes_of_one_round_ask_one_after_the_other(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, tool_approval="write_file")
    other = ("write_file", {"path": "other.txt", "content": "second"})
    fake_llm.script(Reply.tool_calls([WRITE, other]), Reply.text("Both written."))
    async with running_service(settings) as client:
        _, asked = await turn(client, "c-two-writes", query="Write both")
        [first] = of_type(asked, "approval")
        _, between = await turn(
            client, "c-two-writes", approval=decision(first["approvalId"], "approve")
        )
        [second] = of_type(between, "approval")
        _, done = await turn(
            client, "c-two-writes", approval=decision(second["approvalId"], "reject")
        )
        [stored] = await history(client, "c-two-writes")

    workspace = workspace_root(settings.data_dir, "local", "c-two-writes")
    assert first["arguments"] == WRITE[1]
    assert [e["toolName"] for e in of_type(between, "tool_end")] == ["write_file"]
    assert between[-1]["status"] == "paused"
    assert second["arguments"] == other[1]
    assert (workspace / "notes.txt").read_text() == "hello"
    assert not (workspace / "other.txt").exists()
    assert done[-1]["status"] == "completed"
    assert [(t["name"], t["isError"]) for t in stored["tools"]] == [
        ("write_file", False),
        ("write_file", True),
    ]
    # The model read both results of its round, in the order it asked.
    told = tool_results(fake_llm.requests[-1])
    assert told[0] != told[1]
    assert "Declined by the user" in told[1]


async def test_a_waiting_turn_holds_no_stream_slot_and_no_running_task(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(
        backend, tmp_path, fake_llm, tool_approval="write_file", max_streams_per_user=1
    )
    fake_llm.script(Reply.tool_calls([WRITE]), Reply.text("Another answer."))
    async with running_service(settings) as client:
        _, asked = await turn(client, "c-waits", query="Write my notes")
        runs = (await client.get("/agent/runs")).json()["data"]
        status, other = await turn(client, "c-meanwhile", query="Something else")

    assert asked[-1]["status"] == "paused"
    assert [(r["conversationId"], r["status"], r["taskId"]) for r in runs] == [
        ("c-waits", "paused", None)
    ]
    assert status == 200
    assert other[-1]["status"] == "completed"
