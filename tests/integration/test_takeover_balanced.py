"""Deploys and crashes behind a load balancer cut no turn, and the clients resume by themselves.

Instances as deployed (uvicorn processes) behind HAProxy, on PostgreSQL
through PgBouncer in transaction mode and on a Redis of the test's own
(`cluster`, tests/integration/conftest.py): clients know one address, the
load balancer's. The model writes each answer a word at a time
(`SlowWriter`), so a turn runs ten seconds. One instance is told to go
(SIGTERM: it drains) or killed (SIGKILL) mid-turn; its turns go on at
another, and each client, resuming through the load balancer, gets its whole
answer: our own stream (`follow`, as the page does), and the real AI SDK and
AG-UI clients with the resuming transport and agent their pages document
(docs/integrate/ai-sdk.md, ag-ui.md).
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from app.agents.agent_turn import MOVED_NOTICE
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import history
from tests.integration.test_takeover import (
    DRAIN_SECONDS,
    PAUSE,
    SHORT,
    WORDS,
    assert_whole,
    nine_turns,
)
from tests.support.cluster import Cluster
from tests.support.js_clients import JS, js_client, run_client
from tests.support.moving_turns import Balanced, SlowWriter, answer_for, follow, moved
from tests.support.polling import eventually
from tests.support.processes import RedisServer
from tests.support.sse import Event

pytestmark = [pytest.mark.postgres]


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The cluster's Redis: the test's own, so a dead instance's keys are nobody else's."""
    return redis_server.url


@pytest.fixture(autouse=True)
def slow_writer(fake_llm: FakeOpenAI) -> None:
    fake_llm.responder = SlowWriter(WORDS, PAUSE)


async def nine_turns_through(
    cluster: Cluster,
) -> tuple[Balanced, list[asyncio.Task[list[Event]]], list[str], dict[str, int]]:
    """Three instances started, and nine turns through HAProxy each showing text; how many
    each instance holds."""
    doors = Balanced(await cluster.start(3, **SHORT))
    turns, questions = await nine_turns(doors)
    assert cluster.haproxy is not None
    return doors, turns, questions, await cluster.haproxy.sessions()


async def test_sigterm_to_one_of_three_cuts_no_turn_and_new_turns_go_elsewhere(
    cluster: Cluster,
) -> None:
    doors, turns, questions, held = await nine_turns_through(cluster)
    draining = cluster.instance("a")
    draining.terminate()
    signalled = time.monotonic()

    async with httpx.AsyncClient(base_url=draining.url) as direct:

        async def not_ready() -> bool:
            return (await direct.get("/ready")).status_code == 503

        not_ready_after = await eventually(not_ready, within=5, what="/ready answering 503")
    # Sent while it drains: one may reach it before it leaves the rotation, and is refused
    # there (503 DRAINING) and sent to another instance by the load balancer.
    new_questions = [f"n{n}" for n in range(3)]
    new = [
        asyncio.create_task(follow(doors, 0, {"query": q, "conversationId": f"c-{q}"}))
        for q in new_questions
    ]
    exited_after = await draining.exited(within=DRAIN_SECONDS + 10)
    exited_at = time.monotonic() - signalled
    seen = await asyncio.gather(*turns)
    fresh = await asyncio.gather(*new)

    assert not_ready_after < 1.0
    assert exited_after < exited_at < DRAIN_SECONDS + 10
    await assert_whole(doors, seen, questions)
    await assert_whole(doors, fresh, new_questions)
    # The drained instance's turns moved, and said so; none of the new ones ran there.
    assert held["a"] > 0
    assert sum(moved(s, MOVED_NOTICE) for s in seen) == held["a"]
    assert not any(moved(s, MOVED_NOTICE) for s in fresh)


async def test_sigkill_to_one_of_three_cuts_no_turn_and_none_is_interrupted(
    cluster: Cluster,
) -> None:
    doors, turns, questions, held = await nine_turns_through(cluster)
    await cluster.instance("b").kill()
    seen = await asyncio.gather(*turns)
    stored = [(await history(doors.clients[0], f"c-{q}"))[0]["status"] for q in questions]

    await assert_whole(doors, seen, questions)
    assert held["b"] > 0
    assert sum(moved(s, MOVED_NOTICE) for s in seen) == held["b"]
    assert stored == ["completed"] * len(questions)


def answer_text(parts: list[dict[str, str]]) -> str:
    return "".join(part["text"] for part in parts if part["type"] == "text")


async def test_an_ai_sdk_chat_resumes_by_itself_when_its_instance_is_killed(
    cluster: Cluster,
) -> None:
    js_client("ai-sdk", "ai")
    client = await cluster.start(2, **SHORT)
    spec = {"chatId": "sdk-moved", "text": "Tell me"}
    async with run_client(
        JS / "ai-sdk" / "resuming.mjs", f"{cluster.url}/ai-sdk/chat", spec
    ) as node:
        await node.until("text")
        await cluster.instance(await cluster.serving()).kill()
        await node.finish()
    stored = (await history(client, "sdk-moved"))[0]

    assert node.of("error") == []
    (message,) = node.of("message")
    assert node.of("status") == ["ready"]
    assert answer_text(message["parts"]) == answer_for("Tell me", WORDS) == stored["answer"]
    assert message["metadata"]["status"] == stored["status"] == "completed"
    assert any(p["type"] == "reasoning" and p["text"] == MOVED_NOTICE for p in message["parts"])
    # It reconnected after the parts it had, not from the start.
    assert node.of("reconnect")
    assert int(node.of("reconnect")[0]) > 1


async def test_an_ag_ui_agent_resumes_by_itself_when_its_instance_is_killed(
    cluster: Cluster,
) -> None:
    script = js_client("ag-ui", "@ag-ui/client")
    client = await cluster.start(2, **SHORT)
    spec = {"threadId": "agui-moved", "resuming": True, "runs": [{"message": "Tell me"}]}
    async with run_client(script, f"{cluster.url}/ag-ui/chat", spec) as node:
        await node.until("event", lambda e: e["type"] == "TEXT_MESSAGE_CONTENT")
        await cluster.instance(await cluster.serving()).kill()
        await node.finish()
    stored = (await history(client, "agui-moved"))[0]

    assert node.of("error") == []
    events = node.of("event")
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == answer_for("Tell me", WORDS) == stored["answer"]
    assert stored["status"] == "completed"
    assert [e["type"] for e in events].count("RUN_STARTED") == 1
    assert [f["outcome"] for f in node.of("finished")] == ["success"]
    assert node.of("reconnect")
    assert int(node.of("reconnect")[0]) > 1
