"""Turns that outlive their instance: a drain (SIGTERM) and a death (SIGKILL) cut nothing.

Three instances as deployed (uvicorn processes, tests/support/cluster.py) share
the run's PostgreSQL and a Redis of the test's own; the model is a fake in the
test process that writes each answer a word at a time (`SlowWriter`), so a
turn runs for seconds. A client follows its turn as the page does: when its
stream ends without `complete` it resumes on another instance with its last
event id. Settings are short (`DRAIN_SECONDS`, `INSTANCE_DEAD_SECONDS`) so the
tests wait seconds, not the defaults' minutes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agents.base import MOVED_NOTICE
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import TEST_LLM_KEY, history
from tests.support.cluster import Cluster, SlowWriter, answer_for, event_ids, follow, moved
from tests.support.polling import eventually
from tests.support.processes import RedisServer
from tests.support.sse import Event, text_of

pytestmark = [pytest.mark.postgres]

DRAIN_SECONDS = 2.0
DEAD_SECONDS = 2.0
WORDS = 20
PAUSE = 0.5
"""Twenty words half a second apart: ten-second turns."""


@pytest.fixture
async def cluster(
    tmp_path: Path, postgres_url: str, redis_server: RedisServer, fake_llm: FakeOpenAI
) -> AsyncIterator[Cluster]:
    fake_llm.responder = SlowWriter(WORDS, PAUSE)
    cluster = Cluster(
        tmp_path,
        {
            "DATABASE_URL": postgres_url,
            "REDIS_URL": redis_server.url,
            "LLM_BASE_URL": fake_llm.base_url,
            "LLM_API_KEY": TEST_LLM_KEY,
            "LLM_MODEL": "fake-model",
            "RECOMMENDATIONS_ENABLED": "false",
            "LOG_LEVEL": "WARNING",
            "DRAIN_SECONDS": str(DRAIN_SECONDS),
            "INSTANCE_DEAD_SECONDS": str(DEAD_SECONDS),
            "PARTIAL_SAVE_SECONDS": "0.5",
            "SSE_PING_SECONDS": "1",
            "STREAMS_PER_MINUTE": "0",
            "MAX_STREAMS_PER_USER": "0",
        },
    )
    try:
        yield cluster
    finally:
        await cluster.close()


async def nine_turns(cluster: Cluster) -> tuple[list[asyncio.Task[list[Event]]], list[str]]:
    """Nine turns, three on each instance, each showing text before this returns."""
    questions = [f"q{n}" for n in range(9)]
    started = [asyncio.Event() for _ in questions]
    turns = [
        asyncio.create_task(
            follow(cluster, n % 3, {"query": q, "conversationId": f"c-{q}"}, started=started[n])
        )
        for n, q in enumerate(questions)
    ]
    async with asyncio.timeout(30):
        await asyncio.gather(*(s.wait() for s in started))
    return turns, questions


async def assert_whole(cluster: Cluster, turns: list[list[Event]], questions: list[str]) -> None:
    """Each turn ended `completed`, with the answer it would have had uncut, stored as shown,
    its event ids going on one by one from 1."""
    client = cluster.clients[cluster.live()[0]]
    for seen, question in zip(turns, questions, strict=True):
        stored = await history(client, f"c-{question}")
        assert seen[-1]["type"] == "complete", seen[-3:]
        assert seen[-1]["status"] == "completed"
        assert event_ids(seen) == list(range(1, len(seen) + 1))
        assert text_of(seen) == answer_for(question, WORDS) == stored[0]["answer"]
        assert stored[0]["status"] == "completed"


async def test_sigterm_drains_an_instance_and_its_turns_go_on_elsewhere(
    cluster: Cluster, fake_llm: FakeOpenAI
) -> None:
    await cluster.start(3)
    turns, questions = await nine_turns(cluster)
    draining = cluster.processes[0]
    cluster.down.add(0)
    draining.terminate()
    signalled = time.monotonic()

    async def not_ready() -> bool:
        return (await cluster.clients[0].get("/ready")).status_code == 503

    not_ready_after = await eventually(not_ready, within=5, what="/ready answering 503")
    refused = await cluster.clients[0].get(
        "/agent/chat/stream", params={"query": "New", "conversationId": "c-new"}
    )
    exited_after = await draining.exited(within=DRAIN_SECONDS + 10)
    seen = await asyncio.gather(*turns)

    assert not_ready_after < 1.0
    assert refused.status_code == 503
    assert refused.json()["data"] == {"error": "DRAINING"}
    assert refused.headers["Retry-After"] == "1"
    assert time.monotonic() - signalled < DRAIN_SECONDS + 10
    assert exited_after < DRAIN_SECONDS + 10
    await assert_whole(cluster, seen, questions)
    # The drained instance's three turns moved, and said so; the others ran where they began.
    assert [moved(s, MOVED_NOTICE) for s in seen] == [n % 3 == 0 for n in range(9)]
    assert sorted(fake_llm.responder.continued) == ["q0", "q3", "q6"]  # type: ignore[attr-defined]


async def test_a_killed_instances_turns_go_on_elsewhere_and_none_is_interrupted(
    cluster: Cluster,
) -> None:
    await cluster.start(3)
    turns, questions = await nine_turns(cluster)
    cluster.down.add(1)
    await cluster.processes[1].kill()
    seen = await asyncio.gather(*turns)

    await assert_whole(cluster, seen, questions)
    assert [moved(s, MOVED_NOTICE) for s in seen] == [n % 3 == 1 for n in range(9)]
