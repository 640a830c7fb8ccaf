"""Schedules over HTTP (API.md "Schedules"): made, checked, listed, changed, paused, run now,
their runs ordinary turns of their owner; another user's is not found; admins see and pause
any. The clock's guarantees across instances are test_schedule_instances.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, history, running_service, settings_for
from tests.integration.test_projects import PIRATE, listed, project
from tests.support.polling import eventually

DAILY_EIGHT = "FREQ=DAILY;BYHOUR=8;BYMINUTE=0"
KEYS = "key-alice:alice,key-bob:bob,key-root:root"


def as_(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer key-{user}"}


async def make(
    client: httpx.AsyncClient, headers: dict[str, str] | None = None, **body: Any
) -> Any:
    fields = {"kind": "chat", "query": "What changed in X?", "rrule": DAILY_EIGHT, **body}
    response = await client.post("/schedules", json=fields, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def runs_of(
    client: httpx.AsyncClient, schedule_id: str, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    response = await client.get(f"/schedules/{schedule_id}/runs", headers=headers)
    assert response.status_code == 200, response.text
    listed: list[dict[str, Any]] = response.json()["data"]
    return listed


async def settled(
    client: httpx.AsyncClient, schedule_id: str, count: int, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Its runs, once `count` of them have ended (none still starting or running)."""
    found: list[dict[str, Any]] = []

    async def done() -> bool:
        found[:] = await runs_of(client, schedule_id, headers)
        ended = [r for r in found if r["status"] not in ("starting", "running")]
        return len(ended) >= count

    await eventually(done, within=20, what=f"{count} ended run(s)")
    return found


async def test_a_schedule_made_shows_its_next_three_times_in_its_zone(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        made = await make(client, timezone="Europe/Paris", name="Morning news")
        listed = (await client.get("/schedules")).json()["data"]
        one = (await client.get(f"/schedules/{made['scheduleId']}")).json()["data"]

    assert made["name"] == "Morning news"
    assert made["enabled"] is True
    assert made["timezone"] == "Europe/Paris"
    assert made["conversation"] == "new"
    assert made["pausedReason"] is None
    assert made["lastRun"] is None
    assert len(made["nextRuns"]) == 3
    assert all(t[11:19] == "08:00:00" and t[19:] in ("+01:00", "+02:00") for t in made["nextRuns"])
    assert listed == [one] == [made]


async def test_a_schedule_is_changed_paused_resumed_and_deleted(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        made = await make(client, rrule=None, cron="30 7 * * 1-5", timezone="Asia/Tokyo")
        path = f"/schedules/{made['scheduleId']}"
        paused = (await client.patch(path, json={"enabled": False})).json()["data"]
        resumed = (await client.patch(path, json={"enabled": True})).json()["data"]
        moved = (await client.patch(path, json={"rrule": DAILY_EIGHT, "name": "Daily"})).json()
        deleted = await client.delete(path)
        gone = await client.get(path)

    assert made["cron"] == "30 7 * * 1-5"
    assert all(t.endswith("T07:30:00+09:00") for t in made["nextRuns"])
    assert (paused["enabled"], paused["nextRuns"]) == (False, [])
    assert resumed["enabled"] is True
    assert resumed["nextRuns"] == made["nextRuns"]
    assert (moved["data"]["cron"], moved["data"]["rrule"]) == (None, DAILY_EIGHT)
    assert moved["data"]["name"] == "Daily"
    assert all(t.endswith("T08:00:00+09:00") for t in moved["data"]["nextRuns"])
    assert deleted.status_code == 200
    assert gone.status_code == 404


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"rrule": "FREQ=MINUTELY;INTERVAL=10"}, "every 10 min at times; the shortest interval"),
        ({"rrule": None, "cron": "*/5 * * * *"}, "shortest interval"),
        ({"rrule": "FREQ=SOMETIMES"}, "rrule"),
        ({"cron": "0 8 * * *"}, "either rrule or cron"),
        ({"rrule": None}, "either rrule or cron"),
        ({"timezone": "Mars/Olympus"}, "IANA"),
        ({"rrule": "FREQ=DAILY;UNTIL=20200101T000000Z"}, "no due time ahead"),
        ({"kind": "nonsense"}, "kind must be one of"),
        ({"kind": "file"}, "needs a file"),
        ({"query": "  "}, "query is required"),
        ({"webhookUrl": "https://example.com/hook"}, "webhookUrl refused"),
    ],
)
async def test_a_bad_schedule_is_refused_with_the_reason_and_nothing_is_kept(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, body: dict[str, Any], says: str
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        fields = {"kind": "chat", "query": "Hi", "rrule": DAILY_EIGHT, **body}
        refused = await client.post("/schedules", json=fields)
        kept = (await client.get("/schedules")).json()["data"]

    assert refused.status_code == 400
    assert says in refused.json()["message"]
    assert kept == []


async def test_an_unknown_model_is_refused_as_on_a_stream(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        refused = await client.post(
            "/schedules",
            json={"kind": "chat", "query": "Hi", "rrule": DAILY_EIGHT, "model": "nope"},
        )

    assert refused.status_code == 400
    assert refused.json()["data"] == {"error": "MODEL_UNKNOWN"}


async def test_a_user_may_have_only_so_many_schedules(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, schedules_per_user=2)
    async with running_service(settings) as client:
        await make(client)
        await make(client)
        third = await client.post(
            "/schedules", json={"kind": "chat", "query": "Hi", "rrule": DAILY_EIGHT}
        )

    assert third.status_code == 400
    assert "2 schedules, the most" in third.json()["message"]


async def test_run_now_makes_one_run_that_is_an_ordinary_turn_of_the_owner(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Here is what changed."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        made = await make(client, enabled=False)
        started = await client.post(f"/schedules/{made['scheduleId']}/run")
        runs = await settled(client, made["scheduleId"], 1)
        stored = await history(client, runs[0]["conversationId"])
        shown = (await client.get(f"/schedules/{made['scheduleId']}")).json()["data"]

    run = started.json()["data"]
    assert started.status_code == 200
    assert run["trigger"] == "now"
    assert run["status"] in ("running", "completed")
    assert [(r["runId"], r["status"], r["turnId"]) for r in runs] == [
        (run["runId"], "completed", stored[0]["id"])
    ]
    assert [(t["question"], t["answer"]) for t in stored] == [
        ("What changed in X?", "Here is what changed.")
    ]
    assert shown["lastRun"]["status"] == "completed"
    assert shown["enabled"] is False


async def test_a_same_conversation_schedule_goes_on_in_its_conversation_and_skips_when_busy(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.text("First."), Reply.hang(first_text="Second, slowly"), Reply.text("Fourth.")
    )
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        made = await make(client, conversation="same", enabled=False)
        path = f"/schedules/{made['scheduleId']}/run"
        await client.post(path)
        await settled(client, made["scheduleId"], 1)
        await client.post(path)
        third = (await client.post(path)).json()["data"]
        await client.post("/agent/stop", params={"conversationId": made["conversationId"]})
        await settled(client, made["scheduleId"], 3)
        await client.post(path)
        runs = await settled(client, made["scheduleId"], 4)
        stored = await history(client, made["conversationId"])

    assert made["conversationId"]
    assert (third["status"], third["reason"]) == (
        "skipped",
        "the previous run in its conversation was still going",
    )
    assert [r["status"] for r in reversed(runs)] == ["completed", "stopped", "skipped", "completed"]
    assert {r["conversationId"] for r in runs} == {made["conversationId"]}
    assert [(t["answer"], t["status"]) for t in stored] == [
        ("First.", "completed"),
        ("Second, slowly", "stopped"),
        ("Fourth.", "completed"),
    ]


async def test_failed_runs_in_a_row_pause_the_schedule_with_the_reason(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(*(Reply.error(400, message="no") for _ in range(2)))
    settings = settings_for(backend, tmp_path, fake_llm, schedule_max_failures=2)
    async with running_service(settings) as client:
        made = await make(client)
        path = f"/schedules/{made['scheduleId']}"
        await client.post(f"{path}/run")
        await settled(client, made["scheduleId"], 1)
        still = (await client.get(path)).json()["data"]
        await client.post(f"{path}/run")
        runs = await settled(client, made["scheduleId"], 2)

        async def paused() -> bool:
            return (await client.get(path)).json()["data"]["enabled"] is False

        await eventually(paused, what="the schedule paused")
        shown = (await client.get(path)).json()["data"]

    assert still["enabled"] is True
    assert [r["status"] for r in runs] == ["failed", "failed"]
    assert all(r["reason"] for r in runs)
    assert shown["pausedReason"].startswith("Paused after 2 failed runs in a row; the last: ")
    assert shown["nextRuns"] == []


async def test_another_users_schedule_is_not_found_and_admins_see_and_pause_any(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS, admin_users="root")
    async with running_service(settings) as client:
        mine = await make(client, as_("alice"))
        path = f"/schedules/{mine['scheduleId']}"
        bob_sees = [
            (await client.get(path, headers=as_("bob"))).status_code,
            (await client.patch(path, json={"enabled": False}, headers=as_("bob"))).status_code,
            (await client.delete(path, headers=as_("bob"))).status_code,
            (await client.post(f"{path}/run", headers=as_("bob"))).status_code,
            (await client.get(f"{path}/runs", headers=as_("bob"))).status_code,
        ]
        bob_lists = (await client.get("/schedules", headers=as_("bob"))).json()["data"]
        bob_admin = await client.get("/admin/schedules", headers=as_("bob"))
        everyone = (await client.get("/admin/schedules", headers=as_("root"))).json()["data"]
        root_lists = (await client.get("/schedules", headers=as_("root"))).json()["data"]
        paused = await client.patch(
            f"/admin/schedules/{mine['scheduleId']}", json={"enabled": False}, headers=as_("root")
        )
        alice_sees = (await client.get(path, headers=as_("alice"))).json()["data"]

    assert bob_sees == [404, 404, 404, 404, 404]
    assert bob_lists == []
    assert bob_admin.status_code == 404
    assert [(s["scheduleId"], s["userId"]) for s in everyone] == [(mine["scheduleId"], "alice")]
    assert root_lists == []
    assert paused.status_code == 200
    assert (alice_sees["enabled"], alice_sees["pausedReason"]) == (
        False,
        "Paused by an administrator",
    )
    assert (await_runs := alice_sees["lastRun"]) is None, await_runs


async def test_the_clock_runs_a_due_schedule_once_per_due_time(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(
        backend, tmp_path, fake_llm, schedule_min_seconds=1, schedule_poll_seconds=0.5
    )
    async with running_service(settings) as client:
        made = await make(client, rrule="FREQ=SECONDLY;INTERVAL=2")
        runs = await settled(client, made["scheduleId"], 3)
        await client.patch(f"/schedules/{made['scheduleId']}", json={"enabled": False})

    due = sorted(r["dueTime"] for r in runs)
    assert len(set(due)) == len(due)
    assert all(r["trigger"] == "schedule" for r in runs)
    assert len({r["conversationId"] for r in runs}) == len(runs)


async def test_a_project_not_the_callers_is_not_found_and_nothing_is_kept(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=KEYS)
    async with running_service(settings) as client:
        bobs = await client.post("/projects", json={"name": "Bob's"}, headers=as_("bob"))
        fields = {"kind": "chat", "query": "Hi", "rrule": DAILY_EIGHT}
        refused = [
            await client.post(
                "/schedules", json={**fields, "projectId": project_id}, headers=as_("alice")
            )
            for project_id in (bobs.json()["data"]["projectId"], "f" * 32)
        ]
        mine = await make(client, as_("alice"))
        moved = await client.patch(
            f"/schedules/{mine['scheduleId']}",
            json={"projectId": bobs.json()["data"]["projectId"]},
            headers=as_("alice"),
        )
        kept = (await client.get("/schedules", headers=as_("alice"))).json()["data"]

    assert [r.status_code for r in refused] == [404, 404]
    assert all(r.json()["message"] == "Project not found" for r in refused)
    assert moved.status_code == 404
    assert [(s["scheduleId"], s["projectId"]) for s in kept] == [(mine["scheduleId"], None)]


async def test_a_run_in_a_project_has_its_instructions_its_default_model_and_is_listed_in_it(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with FakeOpenAI() as fast:
        fast.script(Reply.text("Arr, here is what changed."))
        models = [
            {"id": "fast", "provider": "openai", "baseUrl": fast.base_url, "apiKey": "sk-fast-key"}
        ]
        settings = settings_for(backend, tmp_path, fake_llm, models=orjson.dumps(models).decode())
        async with running_service(settings) as client:
            project_id = await project(client, instructions=PIRATE, defaultModel="fast")
            made = await make(client, projectId=project_id, enabled=False)
            await client.post(f"/schedules/{made['scheduleId']}/run")
            [run] = await settled(client, made["scheduleId"], 1)
            stored = await history(client, run["conversationId"])
            in_project = await listed(client, projectId=project_id)

    assert made["projectId"] == project_id
    assert made["model"] is None
    assert run["status"] == "completed"
    assert PIRATE in fast.system_text(fast.requests[0])
    assert fake_llm.requests == []
    assert [(t["answer"], t["model"]) for t in stored] == [("Arr, here is what changed.", "fast")]
    assert in_project == [(run["conversationId"], project_id)]


async def test_a_same_schedule_moved_to_another_project_takes_its_conversation_along(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    french = "Always answer in French."
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        flat = await project(client, instructions=PIRATE)
        office = await project(client, name="Office", instructions=french)
        made = await make(client, projectId=flat, conversation="same", enabled=False)
        path = f"/schedules/{made['scheduleId']}"
        await client.post(f"{path}/run")
        await settled(client, made["scheduleId"], 1)
        first = fake_llm.system_text(fake_llm.requests[-1])
        moved = (await client.patch(path, json={"projectId": office})).json()["data"]
        await client.post(f"{path}/run")
        runs = await settled(client, made["scheduleId"], 2)
        second = fake_llm.system_text(fake_llm.requests[-1])
        in_office = await listed(client, projectId=office)

    assert (PIRATE in first, french in first) == (True, False)
    assert moved["projectId"] == office
    assert [r["status"] for r in runs] == ["completed", "completed"]
    assert (PIRATE in second, french in second) == (False, True)
    assert in_office == [(made["conversationId"], office)]


async def test_deleting_a_project_deletes_its_schedules_and_their_runs(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        project_id = await project(client)
        inside = await make(client, projectId=project_id, enabled=False)
        outside = await make(client)
        await client.post(f"/schedules/{inside['scheduleId']}/run")
        [run] = await settled(client, inside["scheduleId"], 1)
        deleted = await client.delete(f"/projects/{project_id}")
        kept = (await client.get("/schedules")).json()["data"]
        gone = await client.get(f"/schedules/{inside['scheduleId']}")
        runs_gone = await client.get(f"/schedules/{inside['scheduleId']}/runs")
        conversation = await client.get(f"/session/{run['conversationId']}")

    assert deleted.json()["data"] == {"projectId": project_id, "deletedConversations": 1}
    assert [s["scheduleId"] for s in kept] == [outside["scheduleId"]]
    assert (gone.status_code, runs_gone.status_code) == (404, 404)
    assert conversation.status_code == 404
