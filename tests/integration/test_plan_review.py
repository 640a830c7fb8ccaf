"""Deep research with `reviewPlan: true`: the plan waits for the user before any task runs.

Approve runs it as planned; edit runs the user's tasks instead; reject (with a
message, or a plain message instead of a decision) plans the round again with
the user's words as feedback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import Backend, history
from tests.integration.test_deep_research import (
    COSTS,
    INDEPENDENT,
    MARKET,
    QUESTION,
    deep_settings,
    research_service,
)
from tests.support.research import REPORT, Researcher
from tests.support.sse import Event, collect

ONE_TASK = {"tasks": [{"id": "x", "title": "Installers"}]}


async def deep(client: httpx.AsyncClient, conversation: str, **fields: Any) -> list[Event]:
    body = {"conversationId": conversation, **fields}
    async with client.stream("POST", "/agent/deep/stream", json=body) as response:
        assert response.status_code == 200, await response.aread()
        return await collect(response)


def approval_of(events: list[Event]) -> dict[str, Any]:
    [approval] = [e for e in events if e["type"] == "approval"]
    return approval


async def test_a_reviewed_plan_runs_once_approved(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode())
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        asked = await deep(client, "c-review", query=QUESTION, reviewPlan=True)
        tasks_before = researcher.calls[MARKET] + researcher.calls[COSTS]
        [paused] = await history(client, "c-review")
        approval = approval_of(asked)
        done = await deep(
            client,
            "c-review",
            approval={"approvalId": approval["approvalId"], "decision": "approve"},
        )
        [stored] = await history(client, "c-review")

    assert approval["kind"] == "plan"
    assert [t["title"] for t in approval["plan"]] == [MARKET, COSTS]
    assert [t["title"] for t in approval["arguments"]["tasks"]] == [MARKET, COSTS]
    assert asked[-1]["status"] == "paused"
    assert tasks_before == 0
    assert paused["pending"][0]["kind"] == "plan"
    assert done[-1]["status"] == "completed"
    assert researcher.calls[MARKET] > 0
    assert researcher.calls[COSTS] > 0
    assert stored["status"] == "completed"
    assert REPORT in stored["answer"]


async def test_an_approved_plans_tasks_start_from_clean_requests_and_search(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    """The decision is the turn's, not a tool call of the tasks': each task's first model call
    is its prompt alone, and its search runs."""
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode())
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        asked = await deep(client, "c-approved", query=QUESTION, reviewPlan=True)
        approval = approval_of(asked)
        await deep(
            client,
            "c-approved",
            approval={"approvalId": approval["approvalId"], "decision": "approve"},
        )
        [stored] = await history(client, "c-approved")

    for task in (MARKET, COSTS):
        first = researcher.requests[task][0]
        assert [m.role for m in first.messages] == ["system", "user"], task
    assert sorted(fake_search.queries) == [MARKET, COSTS]
    assert sorted((t["taskId"], t["name"], t["isError"]) for t in stored["tools"]) == [
        ("1.1", "web_search", False),
        ("1.2", "web_search", False),
    ]


async def test_an_edited_plan_runs_the_users_tasks(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode())
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        asked = await deep(client, "c-edit-plan", query=QUESTION, reviewPlan=True)
        approval = approval_of(asked)
        done = await deep(
            client,
            "c-edit-plan",
            approval={
                "approvalId": approval["approvalId"],
                "decision": "edit",
                "arguments": ONE_TASK,
            },
        )

    assert done[-1]["status"] == "completed"
    assert researcher.calls["Installers"] > 0
    assert researcher.calls[MARKET] == 0
    assert researcher.calls[COSTS] == 0


async def test_a_rejected_plan_is_planned_again_with_the_users_feedback(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode(), orjson.dumps(ONE_TASK).decode())
    settings = deep_settings(backend, tmp_path, fake_search)
    feedback = "Only installers, please."
    async with research_service(settings, researcher) as client:
        asked = await deep(client, "c-reject-plan", query=QUESTION, reviewPlan=True)
        approval = approval_of(asked)
        again = await deep(
            client,
            "c-reject-plan",
            approval={
                "approvalId": approval["approvalId"],
                "decision": "reject",
                "message": feedback,
            },
        )
        second = approval_of(again)
        done = await deep(
            client,
            "c-reject-plan",
            approval={"approvalId": second["approvalId"], "decision": "approve"},
        )

    replanned = researcher.requests["plan"][-1].messages[0].text_content()
    assert feedback in replanned
    assert again[-1]["status"] == "paused"
    assert [t["title"] for t in second["plan"]] == ["Installers"]
    assert done[-1]["status"] == "completed"
    assert researcher.calls[MARKET] == 0
    assert researcher.calls["Installers"] > 0


async def test_a_question_asked_back_is_what_the_paused_turn_waits_for(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    asked = "Which region?"
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode(), clarify=asked)
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        paused = await deep(client, "c-question", query=QUESTION)
        [stored] = await history(client, "c-question")
        runs = (await client.get("/agent/runs")).json()["data"]

    assert paused[-1]["status"] == "paused"
    assert [e for e in paused if e["type"] == "approval"] == []
    assert stored["pending"] == [
        {
            "approvalId": None,
            "kind": "question",
            "toolCallId": None,
            "toolName": None,
            "arguments": {},
            "plan": [],
            "message": asked,
            "later": [],
            "toolApproval": None,
        }
    ]
    [waiting] = [r for r in runs if r["conversationId"] == "c-question"]
    assert waiting["pending"][0]["message"] == asked


async def test_an_edited_plan_that_is_not_a_plan_is_asked_for_again(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode())
    settings = deep_settings(backend, tmp_path, fake_search)
    cycle = {
        "tasks": [
            {"id": "a", "title": "A", "dependsOn": ["b"]},
            {"id": "b", "title": "B", "dependsOn": ["a"]},
        ]
    }
    async with research_service(settings, researcher) as client:
        asked = await deep(client, "c-bad-edit", query=QUESTION, reviewPlan=True)
        first = approval_of(asked)
        again = await deep(
            client,
            "c-bad-edit",
            approval={"approvalId": first["approvalId"], "decision": "edit", "arguments": cycle},
        )
        second = approval_of(again)

    thinking = "".join(str(e.get("content", "")) for e in again if e["type"] == "thinking")
    assert "The edited plan is not valid" in thinking
    assert again[-1]["status"] == "paused"
    assert second["approvalId"] != first["approvalId"]
    assert [t["title"] for t in second["plan"]] == [MARKET, COSTS]
    assert researcher.calls[MARKET] == 0
