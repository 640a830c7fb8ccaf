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
import os
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from app.agents.agent_turn import MOVED_NOTICE
from app.agents.tool_history import CONTINUE_NOTE, CUT_SHORT_RESULT
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Body, Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import TEST_LLM_KEY, history
from tests.integration.test_pptx_agent import TITLES
from tests.support.decks import DeckModel
from tests.support.moving_turns import (
    Doors,
    Instances,
    SlowWriter,
    answer_for,
    event_ids,
    follow,
    moved,
)
from tests.support.polling import eventually
from tests.support.processes import RedisServer
from tests.support.receiver import SECRET, Receiver
from tests.support.research import REPORT, over_http, step_named
from tests.support.sse import Event, text_of, types

pytestmark = [pytest.mark.postgres]

DRAIN_SECONDS = 2.0
DEAD_SECONDS = 2.0
WORDS = 20
PAUSE = 0.5
"""Twenty words half a second apart: ten-second turns."""
SHORT = {
    "DRAIN_SECONDS": str(DRAIN_SECONDS),
    "INSTANCE_DEAD_SECONDS": str(DEAD_SECONDS),
    "PARTIAL_SAVE_SECONDS": "0.5",
    "SSE_PING_SECONDS": "1",
    "STREAMS_PER_MINUTE": "0",
    "MAX_STREAMS_PER_USER": "0",
    # The PostgreSQL is shared with the rest of the run: a few connections each.
    "DB_POOL_SIZE": "3",
}
"""Seconds, not the defaults' minutes; no per-user limit on nine turns at once."""


@pytest.fixture
async def cluster(
    tmp_path: Path,
    postgres_url: str,
    redis_server: RedisServer,
    fake_llm: FakeOpenAI,
    receiver: Receiver,
) -> AsyncIterator[Instances]:
    fake_llm.responder = SlowWriter(WORDS, PAUSE)
    cluster = Instances(
        tmp_path,
        {
            "DATABASE_URL": postgres_url,
            "REDIS_URL": redis_server.url,
            "LLM_BASE_URL": fake_llm.base_url,
            "LLM_API_KEY": TEST_LLM_KEY,
            "LLM_MODEL": "fake-model",
            "RECOMMENDATIONS_ENABLED": "false",
            "LOG_LEVEL": "WARNING",
            **SHORT,
            # Every turn's end is announced once, by the instance that ends it.
            "WEBHOOK_URL": receiver.url,
            "WEBHOOK_SECRET": SECRET,
            "OUTBOUND_ALLOWLIST": "127.0.0.1",
        },
    )
    try:
        yield cluster
    finally:
        await cluster.close()


async def nine_turns(cluster: Doors) -> tuple[list[asyncio.Task[list[Event]]], list[str]]:
    """Nine turns, sent to each door in turn, each showing text before this returns."""
    questions = [f"q{n}" for n in range(9)]
    started = [asyncio.Event() for _ in questions]
    doors = len(cluster.clients)
    turns = [
        asyncio.create_task(
            follow(cluster, n % doors, {"query": q, "conversationId": f"c-{q}"}, started=started[n])
        )
        for n, q in enumerate(questions)
    ]
    async with asyncio.timeout(30):
        await asyncio.gather(*(s.wait() for s in started))
    return turns, questions


async def assert_whole(cluster: Doors, turns: list[list[Event]], questions: list[str]) -> None:
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
    cluster: Instances, fake_llm: FakeOpenAI, receiver: Receiver
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
    announced = [(await receiver.next_call()).json() for _ in questions]

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
    # Once each, when it ended: not by the drained instance as its turns moved away.
    assert receiver.calls.empty()
    assert sorted(c["conversationId"] for c in announced) == sorted(f"c-{q}" for q in questions)
    assert {c["status"] for c in announced} == {"completed"}
    assert {c["taskId"] for c in announced} == {s[0]["taskId"] for s in seen}


async def test_a_killed_instances_turns_go_on_elsewhere_and_none_is_interrupted(
    cluster: Instances,
) -> None:
    await cluster.start(3)
    turns, questions = await nine_turns(cluster)
    cluster.down.add(1)
    await cluster.processes[1].kill()
    seen = await asyncio.gather(*turns)

    await assert_whole(cluster, seen, questions)
    assert [moved(s, MOVED_NOTICE) for s in seen] == [n % 3 == 1 for n in range(9)]


async def test_a_turn_carried_on_keeps_its_project_and_its_memory_setting(
    cluster: Instances, fake_llm: FakeOpenAI
) -> None:
    first, _ = await cluster.start(2)
    await first.post("/memory", json={"content": "I am vegetarian"})
    project = {"name": "Garden", "instructions": "Answer as a gardener would."}
    project_id = (await first.post("/projects", json=project)).json()["data"]["projectId"]
    asked = {"q-project": {"projectId": project_id}, "q-temporary": {"memory": "off"}}
    started = {question: asyncio.Event() for question in asked}
    turns = [
        asyncio.create_task(
            follow(
                cluster,
                0,
                {"query": question, "conversationId": f"c-{question}", **extra},
                started=started[question],
            )
        )
        for question, extra in asked.items()
    ]
    async with asyncio.timeout(30):
        await asyncio.gather(*(s.wait() for s in started.values()))
    cluster.down.add(0)
    await cluster.processes[0].kill()
    seen = await asyncio.gather(*turns)

    assert [moved(s, MOVED_NOTICE) for s in seen] == [True, True]
    assert [s[-1]["status"] for s in seen] == ["completed", "completed"]
    # What the instance that carried each turn on sent the model, as the first one did.
    carried = {
        question: [body for body in fake_llm.requests if going_on(body, question)]
        for question in asked
    }
    [in_project] = carried["q-project"]
    [temporary] = carried["q-temporary"]
    assert "Answer as a gardener would." in fake_llm.system_text(in_project)
    assert "I am vegetarian" in fake_llm.system_text(in_project)
    assert "remember" in offered(in_project)
    assert "Answer as a gardener would." not in fake_llm.system_text(temporary)
    assert "I am vegetarian" not in fake_llm.system_text(temporary)
    assert "remember" not in offered(temporary)
    listed = await cluster.clients[1].get("/session/list", params={"projectId": project_id})
    assert [c["conversationId"] for c in listed.json()["data"]["records"]] == ["c-q-project"]


def going_on(body: Body, question: str) -> bool:
    """Whether `body` asks the model to go on with the answer to `question` cut short."""
    messages = body["messages"]
    asked = next(m for m in messages if m["role"] == "user")
    return CONTINUE_NOTE in str(messages[-1]["content"]) and question in str(asked["content"])


def offered(body: Body) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


async def test_a_tool_call_in_flight_at_the_kill_is_closed_not_run_again(
    cluster: Instances, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    await cluster.start(2, TAVILY_API_KEY="tvly-test", TAVILY_BASE_URL=fake_search.base_url)
    fake_search.hang = True
    fake_llm.script(Reply.tool_calls([("web_search", {"query": "slow"})]))
    fake_llm.responder = lambda body: Reply.text("Answered without it.")
    started = asyncio.Event()
    params = {"query": "Look it up", "conversationId": "c-tool"}
    turn = asyncio.create_task(
        follow(cluster, 0, params, started=started, when=lambda e: e["type"] == "tool_start")
    )
    async with asyncio.timeout(30):
        await started.wait()
        await fake_search.started.wait()
    cluster.down.add(0)
    await cluster.processes[0].kill()
    seen = await turn
    stored = (await history(cluster.clients[1], "c-tool"))[0]

    assert fake_search.queries == ["slow"]
    assert types(seen) == [
        "start",
        "thinking",
        "tool_start",
        "thinking",
        "tool_end",
        "text",
        "complete",
    ]
    [end] = [e for e in seen if e["type"] == "tool_end"]
    assert (end["result"], end["isError"]) == (CUT_SHORT_RESULT, True)
    assert seen[-1]["status"] == "completed"
    assert event_ids(seen) == list(range(1, len(seen) + 1))
    # The model read that the call was cut short, and answered without running it again.
    sent = fake_llm.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == [CUT_SHORT_RESULT]
    assert (stored["status"], stored["answer"]) == ("completed", "Answered without it.")
    assert [(t["name"], t["result"], t["isError"]) for t in stored["tools"]] == [
        ("web_search", CUT_SHORT_RESULT, True)
    ]


async def test_a_turn_past_its_moves_ends_interrupted(
    cluster: Instances, fake_llm: FakeOpenAI
) -> None:
    # A minute's turn: it must still run after a move and a third instance's start, however
    # loaded the machine; cut short, it ends at once.
    fake_llm.responder = SlowWriter(WORDS * 6, PAUSE)
    await cluster.start(2, TURN_TAKEOVERS="1")
    started = asyncio.Event()
    seen: list[Event] = []
    turn = asyncio.create_task(
        follow(
            cluster, 0, {"query": "Long", "conversationId": "c-moves"}, started=started, seen=seen
        )
    )
    async with asyncio.timeout(30):
        await started.wait()
    cluster.down.add(0)
    await cluster.processes[0].kill()

    # Its answer so far is in the history before the move (saved as it goes): the client
    # seeing the move is what says the second instance has taken the turn.
    async def moved_once() -> bool:
        return moved(seen, MOVED_NOTICE)

    await eventually(moved_once, within=DEAD_SECONDS + 10, what="the turn carried on")
    (third,) = await cluster.start(1, TURN_TAKEOVERS="1")
    cluster.down.add(1)
    await cluster.processes[1].kill()
    assert await turn is seen
    stored = (await history(third, "c-moves"))[0]

    assert seen[-1]["type"] == "complete"
    assert seen[-1]["status"] == "interrupted"
    assert stored["status"] == "interrupted"
    assert [e["content"] for e in seen if e["type"] == "thinking"].count(MOVED_NOTICE) == 1


MARKET, COSTS = "Market size", "Running costs"
CHAINED = {
    "tasks": [
        {"id": "a", "title": MARKET, "goal": "How big it is", "dependsOn": []},
        {"id": "b", "title": COSTS, "goal": "What it costs", "dependsOn": ["a"]},
    ]
}
"""Costs waits for Market: Market's wave is checkpointed before Costs' first call."""


class HeldResearch:
    """A research's answers by step (`over_http`), counted by step and by task; the first
    call of Costs hangs until its instance dies."""

    def __init__(self, server: FakeOpenAI) -> None:
        self.server = server
        self.calls: Counter[str] = Counter()
        self.held = asyncio.Event()

    def __call__(self, body: Body) -> Reply:
        step = step_named(self.server.system_text(body))
        name = step
        if step == "task":
            name = MARKET if f"Your task: {MARKET}" in orjson.dumps(body).decode() else COSTS
        self.calls[name] += 1
        if name == COSTS and self.calls[name] == 1:
            self.held.set()
            return Reply.hang()
        answer = orjson.dumps(CHAINED).decode() if step == "plan" else over_http(self.server, body)
        return answer if isinstance(answer, Reply) else Reply.text(answer)


async def test_deep_research_goes_on_from_its_last_checkpoint_on_another_instance(
    cluster: Instances, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    research = HeldResearch(fake_llm)
    fake_llm.responder = research
    await cluster.start(
        2,
        TAVILY_API_KEY="tvly-test",
        TAVILY_BASE_URL=fake_search.base_url,
        DEEP_FETCH_PER_TASK="0",
        DEEP_REPORT_FORMATS="none",
    )
    market_done = asyncio.Event()
    turn = asyncio.create_task(
        follow(
            cluster,
            0,
            {"query": "How big is the heat pump market?", "conversationId": "c-deep"},
            kind="deep",
            started=market_done,
            when=lambda e: e["type"] == "step" and e["status"] == "completed",
        )
    )
    async with asyncio.timeout(30):
        await market_done.wait()
        await research.held.wait()
    cluster.down.add(0)
    await cluster.processes[0].kill()
    seen = await turn
    stored = (await history(cluster.clients[1], "c-deep"))[0]

    assert seen[-1]["status"] == "completed"
    assert event_ids(seen) == list(range(1, len(seen) + 1))
    assert moved(seen, MOVED_NOTICE)
    assert text_of(seen) == REPORT == stored["answer"]
    assert stored["status"] == "completed"
    # Nothing finished before the kill ran again: only Costs, whose call was cut, began anew.
    assert research.calls == {
        "clarify": 1,
        "brief": 1,
        "plan": 1,
        MARKET: 2,
        COSTS: 3,
        "critique": 1,
        "report": 1,
    }
    assert sorted(fake_search.queries) == sorted([MARKET, COSTS])
    assert [t["status"] for t in stored["plan"][0]["tasks"]] == ["completed", "completed"]


async def test_a_deck_build_goes_on_from_its_last_stored_step_on_another_instance(
    cluster: Instances, fake_llm: FakeOpenAI
) -> None:
    decks = DeckModel(TITLES, answers={"SCHEMA": [Reply.hang()]})
    fake_llm.responder = decks
    await cluster.start(2, PPTX_PREVIEWS="false", PPTX_PDF="false")
    turn = asyncio.create_task(
        follow(
            cluster,
            0,
            {"query": "A deck on solar power for students", "conversationId": "c-deck"},
            kind="pptx",
        )
    )
    async with asyncio.timeout(30):
        await decks.waiting.setdefault("SCHEMA", asyncio.Event()).wait()
    cluster.down.add(0)
    await cluster.processes[0].kill()
    seen = await turn
    stored = (await history(cluster.clients[1], "c-deck"))[0]

    assert seen[-1]["status"] == "completed"
    assert event_ids(seen) == list(range(1, len(seen) + 1))
    assert moved(seen, MOVED_NOTICE)
    assert [e["name"] for e in seen if e["type"] == "file"] == ["Solar power v1.pptx"]
    assert stored["status"] == "completed"
    assert stored["deck"]["stage"] == "ready"
    # The steps stored before the kill were not asked again; the one it cut was.
    assert decks.asked == {"REQUIREMENT": 1, "TEMPLATE": 1, "OUTLINE": 1, "SCHEMA": 2}


async def test_an_instance_only_slow_finds_its_turn_taken_over_and_stops_writing_it(
    cluster: Instances, fake_llm: FakeOpenAI
) -> None:
    await cluster.start(2)
    started = asyncio.Event()
    turn = asyncio.create_task(
        follow(cluster, 0, {"query": "Slow", "conversationId": "c-slow"}, started=started)
    )
    async with asyncio.timeout(30):
        await started.wait()
    slow = cluster.processes[0]
    os.kill(slow.pid, signal.SIGSTOP)  # hung, not dead: its sockets stay open
    watcher_started = asyncio.Event()
    watcher = asyncio.create_task(
        follow(
            cluster,
            1,
            {"conversationId": "c-slow"},
            started=watcher_started,
            when=lambda e: e["type"] == "thinking" and e["content"] == MOVED_NOTICE,
        )
    )
    async with asyncio.timeout(DEAD_SECONDS + 15):
        await watcher_started.wait()
    os.kill(slow.pid, signal.SIGCONT)
    cluster.down.add(0)
    seen, watched = await asyncio.gather(turn, watcher)
    stored = (await history(cluster.clients[1], "c-slow"))[0]

    # What the slow instance did after it woke never reached a client or the row.
    assert seen == watched
    assert event_ids(seen) == list(range(1, len(seen) + 1))
    assert text_of(seen) == answer_for("Slow", WORDS) == stored["answer"]
    assert (seen[-1]["status"], stored["status"]) == ("completed", "completed")
    assert fake_llm.disconnected.is_set()  # its model call was dropped, not read on
    assert "was taken over by another instance: stopping it here" in slow.output()


async def test_alone_sigterm_drains_running_turns_and_stores_the_rest_interrupted(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """No Redis: nobody can carry a turn on, but the drain still lets turns finish."""

    def writer(body: Body) -> Reply:
        question = body["messages"][-1]["content"]
        return Reply.text(answer_for(question, 4 if question == "short" else 40), delay=PAUSE)

    fake_llm.responder = writer
    alone = Instances(
        tmp_path,
        {
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/app.db",
            "LLM_BASE_URL": fake_llm.base_url,
            "LLM_API_KEY": TEST_LLM_KEY,
            "LLM_MODEL": "fake-model",
            "RECOMMENDATIONS_ENABLED": "false",
            "LOG_LEVEL": "WARNING",
            "DRAIN_SECONDS": "4",
        },
    )
    try:
        (client,) = await alone.start(1)
        started = {q: asyncio.Event() for q in ("short", "long")}
        streams = {
            q: asyncio.create_task(
                follow(alone, 0, {"query": q, "conversationId": f"c-{q}"}, started=started[q])
            )
            for q in started
        }
        async with asyncio.timeout(30):
            await asyncio.gather(*(s.wait() for s in started.values()))
        alone.processes[0].terminate()

        async def not_ready() -> bool:
            return (await client.get("/ready")).status_code == 503

        not_ready_after = await eventually(not_ready, within=5, what="/ready answering 503")
        refused = await client.get("/agent/chat/stream", params={"query": "new"})
        short, long = await asyncio.gather(streams["short"], streams["long"])
        exited_after = await alone.processes[0].exited(within=4 + 10)
        await alone.start(1)
        stored = {q: (await history(alone.clients[-1], f"c-{q}"))[0] for q in streams}
    finally:
        await alone.close()

    assert not_ready_after < 1.0
    assert (refused.status_code, refused.json()["data"]) == (503, {"error": "DRAINING"})
    assert (short[-1]["status"], stored["short"]["status"]) == ("completed", "completed")
    assert text_of(short) == answer_for("short", 4) == stored["short"]["answer"]
    assert (long[-1]["status"], stored["long"]["status"]) == ("interrupted", "interrupted")
    assert exited_after < 4 + 10
