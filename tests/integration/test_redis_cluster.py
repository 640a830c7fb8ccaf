"""A Redis Cluster of three primaries under the service as deployed: instances (uvicorn)
with REDIS_CLUSTER=true and REDIS_URL naming one node.

What crosses instances crosses the cluster's nodes too: a stop and the one-turn rule
(a claim on one node, the stop's message published on another), a resume with
Last-Event-ID on the other instance, the per-user stream limit. Each user's keys share
their user's slot (its hash tag), and the users spread over the nodes: Alice's slot is on
the first primary and Bob's on the second, as `redis-cli --cluster create` splits them.
Turns taken over from a killed or drained instance go on as on one Redis server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from app.agents.agent_turn import MOVED_NOTICE
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import (
    BackgroundTurn,
    instance_environment,
    outcome,
    stored_turns,
)
from tests.integration.test_instances import Instances
from tests.integration.test_takeover import (
    DEAD_SECONDS,
    DRAIN_SECONDS,
    PAUSE,
    WORDS,
    assert_whole,
    nine_turns,
)
from tests.support.moving_turns import Instances as MovingInstances
from tests.support.moving_turns import SlowWriter, moved
from tests.support.redis_topologies import ClusterNodes
from tests.support.sse import Event, collect, events, text_of

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

ANSWER = "one two three four five six seven eight nine ten eleven twelve"
ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


@pytest.fixture
async def instances(
    tmp_path: Path,
    postgres_url: str,
    redis_cluster: ClusterNodes,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
) -> AsyncIterator[Instances]:
    shared = {**redis_cluster.environment, "REDIS_PREFIX": redis_prefix}
    environment = instance_environment(
        postgres_url, shared, fake_llm, API_KEYS="key-alice:alice,key-bob:bob"
    )
    pair = Instances(tmp_path, environment)
    try:
        yield pair
    finally:
        await pair.close()


async def resumed(
    client: httpx.AsyncClient, conversation: str, after: int, headers: dict[str, str]
) -> list[Event]:
    params = {"conversationId": conversation}
    headers = {**headers, "Last-Event-ID": str(after)}
    async with client.stream("GET", "/agent/resume", params=params, headers=headers) as response:
        assert response.status_code == 200
        return await collect(response)


async def test_a_turn_a_resume_a_stop_and_the_409_cross_instances_and_nodes(
    instances: Instances, redis_cluster: ClusterNodes, redis_prefix: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.text(ANSWER, chunks=12, delay=0.1),
        Reply.hang(first_text="Partial answer"),
        Reply.text("Next answer."),
    )
    on_a, on_b = await instances.start()

    # Alice's turn on A, dropped after four events and resumed on B from the last one.
    first: list[Event] = []
    params = {"query": "Tell me", "conversationId": "c-resume"}
    async with on_a.stream("GET", "/agent/chat/stream", params=params, headers=ALICE) as response:
        async for event in events(response):
            first.append(event)
            if len(first) == 4:
                break
    rest = await resumed(on_b, "c-resume", first[-1]["_id"], ALICE)
    whole = await resumed(on_a, "c-resume", 0, ALICE)

    # Bob's turn on A, a second question and a stop sent to B.
    held = BackgroundTurn(on_a, "c-stop", BOB)
    await held.begun()
    keys = await asyncio.to_thread(redis_cluster.keys_by_node, f"{redis_prefix}*")
    second = await outcome(on_b, "c-stop", BOB)
    stopped = await on_b.get("/agent/stop", params={"conversationId": "c-stop"}, headers=BOB)
    held_seen = await held.task
    next_turn = await outcome(on_b, "c-stop", BOB)

    assert first + rest == whole
    assert [e["_id"] for e in whole] == list(range(1, len(whole) + 1))
    assert (whole[-1]["type"], whole[-1]["status"]) == ("complete", "completed")
    assert text_of(whole) == ANSWER
    assert await stored_turns(on_b, "c-resume", ALICE) == [("completed", ANSWER)]
    assert second == 409
    assert stopped.json() == {"success": True, "message": "The task was stopped"}
    assert (held_seen[-1]["type"], held_seen[-1]["status"]) == ("complete", "stopped")
    assert next_turn == "completed"
    assert await stored_turns(on_a, "c-stop", BOB) == [
        ("stopped", "Partial answer"),
        ("completed", "Next answer."),
    ]
    # Bob's claim and list of runs share a node; Alice's keys are on another.
    nodes_of = {
        user: {port for port, found in keys.items() if any(f"{{{user}}}" in k for k in found)}
        for user in ("alice", "bob")
    }
    assert f"{redis_prefix}task:{{bob}}:c-stop" in {k for found in keys.values() for k in found}
    assert len(nodes_of["alice"]) == len(nodes_of["bob"]) == 1
    assert nodes_of["alice"] != nodes_of["bob"]


async def test_the_stream_limit_holds_for_a_user_across_instances_and_not_for_another(
    instances: Instances, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.hang(first_text="One"),
        Reply.hang(first_text="Two"),
        Reply.text("Bob's answer."),
        Reply.text("Alice again."),
    )
    on_a, on_b = await instances.start(MAX_STREAMS_PER_USER="2")
    streams = [BackgroundTurn(on_a, "c-1", ALICE), BackgroundTurn(on_b, "c-2", ALICE)]
    for stream in streams:
        await stream.begun()

    third = await on_a.get(
        "/agent/chat/stream", params={"query": "A third", "conversationId": "c-3"}, headers=ALICE
    )
    bobs = await outcome(on_a, "c-bob", BOB)
    stops = [
        (await client.get("/agent/stop", params={"conversationId": c}, headers=ALICE)).json()
        for client, c in ((on_b, "c-1"), (on_a, "c-2"))
    ]
    await asyncio.gather(*(stream.task for stream in streams))
    after = await outcome(on_b, "c-3", ALICE)

    assert third.status_code == 429
    assert third.json()["message"].startswith("Too many")
    assert bobs == "completed"
    assert [stop["success"] for stop in stops] == [True, True]
    assert after == "completed"


@pytest.fixture
async def moving(
    tmp_path: Path,
    postgres_url: str,
    redis_cluster: ClusterNodes,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
) -> AsyncIterator[MovingInstances]:
    """Instances whose turns move (`test_takeover.py`'s), on the Cluster."""
    fake_llm.responder = SlowWriter(WORDS, PAUSE)
    shared = {**redis_cluster.environment, "REDIS_PREFIX": redis_prefix}
    environment = instance_environment(
        postgres_url,
        shared,
        fake_llm,
        DRAIN_SECONDS=str(DRAIN_SECONDS),
        INSTANCE_DEAD_SECONDS=str(DEAD_SECONDS),
        PARTIAL_SAVE_SECONDS="0.5",
        SSE_PING_SECONDS="1",
        STREAMS_PER_MINUTE="0",
        MAX_STREAMS_PER_USER="0",
        DB_POOL_SIZE="3",
    )
    cluster = MovingInstances(tmp_path, environment)
    try:
        yield cluster
    finally:
        await cluster.close()


async def test_a_killed_instances_turns_go_on_elsewhere_on_a_cluster(
    moving: MovingInstances,
) -> None:
    """The takeover's scripts (the claim, the run's log and its pointer, the list of runs
    together) keep to the user's slot."""
    await moving.start(3)
    turns, questions = await nine_turns(moving)
    moving.down.add(1)
    await moving.processes[1].kill()
    seen = await asyncio.gather(*turns)

    await assert_whole(moving, seen, questions)
    assert [moved(s, MOVED_NOTICE) for s in seen] == [n % 3 == 1 for n in range(9)]


async def test_a_drained_instances_turns_go_on_elsewhere_on_a_cluster(
    moving: MovingInstances,
) -> None:
    await moving.start(3)
    turns, questions = await nine_turns(moving)
    moving.down.add(0)
    moving.processes[0].terminate()
    seen = await asyncio.gather(*turns)

    await assert_whole(moving, seen, questions)
    assert [moved(s, MOVED_NOTICE) for s in seen] == [n % 3 == 0 for n in range(9)]
