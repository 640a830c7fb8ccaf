"""Scheduled runs on two instances sharing PostgreSQL and Redis, served as `scripts/run` serves
them: each due time runs once whichever instance is up, a paused schedule runs nothing, run
now runs once, an instance killed mid-run makes no second run of its due time (its run is
carried on by the other, as any turn is), a draining instance refuses run now (the other
makes the run), and due times missed while every instance was down give one catch-up run.

These wait on the wall clock, since the clock is what is tested: schedules of a few seconds
(`SCHEDULE_MIN_SECONDS=1`) and a one-second poll keep that short.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import history
from tests.integration.test_instances import instance_env
from tests.integration.test_schedules import runs_of
from tests.support.moving_turns import Instances
from tests.support.polling import eventually

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

QUERY = "What changed overnight?"


@pytest.fixture
async def instances(
    tmp_path: Path,
    postgres_url: str,
    redis_url: str,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
) -> AsyncIterator[Instances]:
    env = instance_env(postgres_url, redis_url, redis_prefix, fake_llm, fake_search)
    started = Instances(
        tmp_path,
        {
            **env,
            "SCHEDULE_MIN_SECONDS": "1",
            "SCHEDULE_POLL_SECONDS": "1",
            "INSTANCE_DEAD_SECONDS": "2",
            # Four instances in a test, on a PostgreSQL other tests share.
            "DB_POOL_SIZE": "4",
        },
    )
    try:
        yield started
    finally:
        await started.close()


async def make(client: httpx.AsyncClient, every: int, **body: Any) -> str:
    fields = {"kind": "chat", "query": QUERY, "rrule": f"FREQ=SECONDLY;INTERVAL={every}", **body}
    response = await client.post("/schedules", json=fields)
    assert response.status_code == 200, response.text
    schedule_id: str = response.json()["data"]["scheduleId"]
    return schedule_id


async def until_runs(
    client: httpx.AsyncClient, schedule_id: str, count: int, within: float
) -> list[dict[str, Any]]:
    """Its runs, oldest first, once `count` of them have ended."""
    found: list[dict[str, Any]] = []

    async def enough() -> bool:
        found[:] = await runs_of(client, schedule_id)
        return sum(r["status"] not in ("starting", "running") for r in found) >= count

    await eventually(enough, within=within, what=f"{count} ended runs")
    return sorted(found, key=lambda r: r["dueTime"])


def due(run: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(run["dueTime"])


def steps(runs: list[dict[str, Any]]) -> list[float]:
    return [(due(b) - due(a)).total_seconds() for a, b in itertools.pairwise(runs)]


async def conversations(client: httpx.AsyncClient) -> int:
    listed = await client.get("/session/list", params={"pageNum": 1, "pageSize": 100})
    total: int = listed.json()["data"]["total"]
    return total


async def test_each_due_time_runs_once_on_two_instances_a_paused_one_never_run_now_once(
    instances: Instances,
) -> None:
    on_a, on_b = await instances.start(2)
    every_five = await make(on_a, 5)
    paused = await make(on_b, 5, enabled=False)
    now = await on_b.post(f"/schedules/{paused}/run")

    runs = await until_runs(on_b, every_five, 6, within=60)
    await on_a.patch(f"/schedules/{every_five}", json={"enabled": False})
    runs = await until_runs(on_a, every_five, len(await runs_of(on_a, every_five)), within=20)
    paused_runs = await runs_of(on_a, paused)

    assert steps(runs) == [5.0] * (len(runs) - 1)
    assert all(r["status"] == "completed" and r["trigger"] == "schedule" for r in runs)
    assert len({r["turnId"] for r in runs}) == len(runs)
    assert now.status_code == 200
    assert [(r["runId"], r["trigger"]) for r in paused_runs] == [
        (now.json()["data"]["runId"], "now")
    ]
    # Every turn asked is a run's: no due time made a second turn on the other instance.
    assert await conversations(on_a) == len(runs) + 1


async def test_an_instance_killed_mid_run_makes_no_second_run_of_its_due_time(
    instances: Instances, fake_llm: FakeOpenAI
) -> None:
    """The cut run's turn had begun: the other instance carries it on (its claim and log in
    Redis), so it ends `completed` with the answer it had begun, in its one conversation."""
    fake_llm.script(Reply.hang(first_text="Halfway"))
    (on_a,) = await instances.start(1)
    schedule_id = await make(on_a, 3)

    hanging: list[dict[str, Any]] = []

    async def running() -> bool:
        hanging[:] = [r for r in await runs_of(on_a, schedule_id) if r["status"] == "running"]
        return bool(hanging)

    await eventually(running, within=20, what="the first run running")
    (on_b,) = await instances.start(1)
    await instances.processes[0].kill()
    (cut,) = hanging
    runs = await until_runs(on_b, schedule_id, 4, within=60)
    await on_b.patch(f"/schedules/{schedule_id}", json={"enabled": False})
    stored = await history(on_b, cut["conversationId"])

    assert [r["dueTime"] for r in runs].count(cut["dueTime"]) == 1
    assert len({r["dueTime"] for r in runs}) == len(runs)
    assert next(r for r in runs if r["runId"] == cut["runId"])["status"] == "completed"
    assert [(t["question"], t["status"]) for t in stored] == [(QUERY, "completed")]
    assert stored[0]["answer"].startswith("Halfway")
    assert all(r["status"] == "completed" for r in runs if r["runId"] != cut["runId"])


async def test_a_draining_instance_refuses_run_now_and_the_other_makes_the_run(
    instances: Instances, fake_llm: FakeOpenAI
) -> None:
    """Refused before it claims anything, so the client's retry elsewhere makes the one run."""
    fake_llm.script(Reply.hang(first_text="Halfway"))
    on_a, on_b = await instances.start(2, DRAIN_SECONDS="5")
    schedule_id = await make(on_a, 3600, enabled=False)
    # A turn running on the first instance keeps its drain going for DRAIN_SECONDS.
    await on_a.post(f"/schedules/{schedule_id}/run")
    instances.processes[0].terminate()

    async def draining() -> bool:
        return (await on_a.get("/ready")).status_code == 503

    await eventually(draining, within=5, what="/ready answering 503")
    refused = await on_a.post(f"/schedules/{schedule_id}/run")
    retried = await on_b.post(f"/schedules/{schedule_id}/run")
    runs = await runs_of(on_b, schedule_id)

    assert refused.status_code == 503
    assert refused.json()["data"] == {"error": "DRAINING"}
    assert refused.headers["Retry-After"] == "1"
    assert retried.status_code == 200
    # The first instance's running one, and the retry's: none for the refused request.
    assert len(runs) == 2
    assert retried.json()["data"]["runId"] in {r["runId"] for r in runs}


async def test_due_times_missed_while_every_instance_was_down_give_one_catch_up_run(
    instances: Instances,
) -> None:
    on_a, _ = await instances.start(2)
    schedule_id = await make(on_a, 2)
    await until_runs(on_a, schedule_id, 1, within=20)
    for instance in instances.processes:
        await instance.stop()
    stopped = time.time()
    # Five due times (of two seconds) pass with no instance up.
    await eventually(
        _after(stopped + 11), within=15, what="five due times with every instance down"
    )
    on_c, _ = await instances.start(2)
    after = await until_runs(on_c, schedule_id, len(await runs_of(on_c, schedule_id)) + 3, 60)
    await on_c.patch(f"/schedules/{schedule_id}", json={"enabled": False})

    earlier = [r for r in after if due(r).timestamp() <= stopped]
    later = [r for r in after if due(r).timestamp() > stopped]
    # The first run after the restart is due at least six steps after the last one before:
    # the five (or more) due times between gave that one run.
    assert due(later[0]) - due(earlier[-1]) >= timedelta(seconds=12)
    assert steps(later) == [2.0] * (len(later) - 1)
    assert all(r["status"] == "completed" for r in later)


def _after(moment: float) -> Any:
    async def passed() -> bool:
        return time.time() >= moment

    return passed
