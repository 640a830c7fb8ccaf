"""Two instances as deployed: uvicorn processes sharing one Redis and one PostgreSQL.

The model and search upstreams are fakes in the test process, which the
instances reach over HTTP. These are the guarantees that take more than one
process to show: a stream resumed on the other instance, a stop sent to the
other instance, and an instance killed mid-run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import ask, history, process_env, resume
from tests.support.polling import eventually
from tests.support.processes import ServiceProcess
from tests.support.sse import Event, collect, events, text_of, types

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

TTL = 2


class Instances:
    """Instances A and B of the service on one Redis and one database, with their clients."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self._workdir = workdir
        self._env = env
        self.processes: list[ServiceProcess] = []
        self._clients: list[httpx.AsyncClient] = []

    async def start(self, **env: str) -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
        """Start both (in parallel) with extra environment; clients for A and B."""
        pair = [ServiceProcess(name, self._workdir, {**self._env, **env}) for name in "ab"]
        self.processes.extend(pair)
        await asyncio.gather(*(p.start() for p in pair))
        self._clients.extend(httpx.AsyncClient(base_url=p.url, timeout=10) for p in pair)
        return self._clients[-2], self._clients[-1]

    async def close(self) -> None:
        for client in self._clients:
            await client.aclose()
        await asyncio.gather(*(p.stop() for p in self.processes))


def instance_env(
    postgres_url: str,
    redis_url: str,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
) -> dict[str, str]:
    """An instance's environment: the shared database and Redis, the fake upstreams."""
    return {
        "DATABASE_URL": postgres_url,
        "REDIS_URL": redis_url,
        "REDIS_PREFIX": redis_prefix,
        **process_env(fake_llm, fake_search),
        "LOG_LEVEL": "WARNING",
    }


@pytest.fixture
async def instances(
    tmp_path: Path,
    postgres_url: str,
    redis_url: str,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
) -> AsyncIterator[Instances]:
    cluster = Instances(
        tmp_path, instance_env(postgres_url, redis_url, redis_prefix, fake_llm, fake_search)
    )
    try:
        yield cluster
    finally:
        await cluster.close()


async def stream_until(
    client: httpx.AsyncClient, conversation: str, enough: Callable[[list[Event]], bool]
) -> list[Event]:
    """Ask a question and read its stream until `enough`, then drop the connection."""
    seen: list[Event] = []
    params = {"query": "Tell me", "conversationId": conversation}
    async with client.stream("GET", "/agent/chat/stream", params=params) as response:
        async for event in events(response):
            seen.append(event)
            if enough(seen):
                break
    return seen


ANSWER = "one two three four five six seven eight nine ten eleven twelve"


async def test_a_stream_resumed_on_the_other_instance_misses_nothing_and_repeats_nothing(
    instances: Instances, fake_llm: FakeOpenAI
) -> None:
    on_a, on_b = await instances.start()
    fake_llm.script(Reply.text(ANSWER, chunks=12, delay=0.1))

    first = await stream_until(on_a, "c-resume", lambda seen: len(seen) == 4)
    state_when_resumed: list[dict[str, Any]] = []
    rest: list[Event] = []
    params = {"conversationId": "c-resume", "lastEventId": str(first[-1]["_id"])}
    async with on_b.stream("GET", "/agent/resume", params=params) as response:
        async for event in events(response):
            if not rest:
                state_when_resumed = await history(on_b, "c-resume")
            rest.append(event)
    whole_from_a = await resume(on_a, "c-resume", 0)
    whole_from_b = await resume(on_b, "c-resume", 0)
    stored = await history(on_b, "c-resume")
    unknown = await on_b.get("/agent/resume", params={"conversationId": "never-asked"})

    assert first + rest == whole_from_a == whole_from_b
    assert [e["_id"] for e in whole_from_a] == list(range(1, len(whole_from_a) + 1))
    assert types(whole_from_a) == ["start", "text", "complete"]
    assert whole_from_a[-1]["status"] == "completed"
    assert text_of(whole_from_a) == ANSWER == stored[0]["answer"]
    # The resume followed the run live: it was still running when B's replay began.
    assert state_when_resumed[0]["status"] == "running"
    assert unknown.status_code == 404


async def test_a_stop_sent_to_the_other_instance_stops_the_run_and_its_model_call(
    instances: Instances, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    on_a, on_b = await instances.start()
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "stoppable"})]),
        Reply.hang(first_text="Partial answer"),
        Reply.text("Next answer."),
    )
    stop_params = {"conversationId": "c-stop"}
    seen: list[Event] = []
    params = {"query": "Search and answer", "conversationId": "c-stop"}
    async with on_a.stream("GET", "/agent/chat/stream", params=params) as response:
        async for event in events(response):
            seen.append(event)
            if event["type"] == "text":
                stop = asyncio.create_task(on_b.get("/agent/stop", params=stop_params))
                # The model call hangs until dropped: only the stop can end it. How
                # fast a stop completes is measured in bench/, not bounded here.
                async with asyncio.timeout(10):
                    await fake_llm.disconnected.wait()
                stopped = (await stop).json()
    model_requests = len(fake_llm.requests)
    resumed = await resume(on_b, "c-stop", 0)
    again = (await on_b.get("/agent/stop", params=stop_params)).json()
    on_owner = (await on_a.get("/agent/stop", params=stop_params)).json()
    nothing = (await on_b.get("/agent/stop", params={"conversationId": "never-ran"})).json()
    follow_up = await ask(on_b, "And now?", "c-stop")
    stored = await history(on_a, "c-stop")

    assert stopped == {"success": True, "message": "The task was stopped"}
    assert seen[-1]["type"] == "complete"
    assert seen[-1]["status"] == "stopped"
    assert resumed == seen
    assert types(seen) == ["start", "thinking", "tool_start", "tool_end", "text", "complete"]
    assert model_requests == 2
    assert fake_search.queries == ["stoppable"]
    assert again["success"] is False
    assert on_owner["success"] is False
    assert nothing["success"] is False
    assert follow_up[-1]["status"] == "completed"
    assert [(t["status"], t["answer"]) for t in stored] == [
        ("stopped", "Partial answer"),
        ("completed", "Next answer."),
    ]
    assert [t["name"] for t in stored[0]["tools"]] == ["web_search"]
    assert "Facts about stoppable" in stored[0]["tools"][0]["result"]


async def test_a_killed_instance_frees_its_conversation_and_its_turn_keeps_the_partial_answer(
    instances: Instances, fake_llm: FakeOpenAI
) -> None:
    on_a, on_b = await instances.start(
        TASK_TTL_SECONDS=str(TTL), PARTIAL_SAVE_SECONDS="0.2", SSE_PING_SECONDS="0.5"
    )
    fake_llm.script(Reply.hang(first_text="Half an answer"), Reply.text("A fresh answer."))

    await stream_until(on_a, "c-crash", lambda seen: seen[-1]["type"] == "text")

    async def partial_saved() -> bool:
        answer: str | None = (await history(on_b, "c-crash"))[0]["answer"]
        return answer == "Half an answer"

    await eventually(partial_saved)
    await instances.processes[0].kill()
    busy = await on_b.get(
        "/agent/chat/stream", params={"query": "Again", "conversationId": "c-crash"}
    )
    resumed = asyncio.create_task(resume(on_b, "c-crash", 0))

    async def claim_lapsed() -> bool:
        listed = (await on_b.get("/agent/runs")).json()["data"]
        return not [run for run in listed if run["status"] == "running"]

    # The claim lives at most one TTL past its last refresh, which was before the kill.
    await eventually(claim_lapsed, within=TTL + 1.0, what="the dead instance's claim lapsed")
    second = await ask(on_b, "Try again", "c-crash")
    stored = await history(on_b, "c-crash")

    assert busy.status_code == 409
    assert fake_llm.disconnected.is_set()
    assert second[-1]["status"] == "completed"
    assert [(t["status"], t["answer"]) for t in stored] == [
        ("interrupted", "Half an answer"),
        ("completed", "A fresh answer."),
    ]
    sent = [(m["role"], m["content"]) for m in fake_llm.requests[-1]["messages"]]
    assert ("assistant", "Half an answer") in sent
    replay = await resumed
    assert types(replay) == ["start", "text", "complete"]
    assert replay[-1]["status"] == "interrupted"


DEAD_SECONDS = 2.0


async def test_a_killed_instance_is_noticed_in_seconds_and_its_turns_end_interrupted(
    instances: Instances, fake_llm: FakeOpenAI
) -> None:
    """With no moves left (here `TURN_TAKEOVERS=0`) a dead instance's turns are not carried
    on (test_takeover.py): they end `interrupted`, their conversations free."""
    # The claim TTL stays at its default (30 min): only the instance heartbeat can free them.
    # No rate limit: the test asks again every 50 ms until the conversation is free.
    on_a, on_b = await instances.start(
        INSTANCE_DEAD_SECONDS=str(DEAD_SECONDS),
        PARTIAL_SAVE_SECONDS="0.2",
        STREAMS_PER_MINUTE="0",
        TURN_TAKEOVERS="0",
    )
    fake_llm.script(
        Reply.hang(first_text="Half an answer"),
        Reply.hang(first_text="Left alone"),
        Reply.text("A fresh answer."),
    )
    for conversation in ("c-dies", "c-left"):
        await stream_until(on_b, conversation, lambda seen: seen[-1]["type"] == "text")

    async def partials_saved() -> bool:
        stored = [(await history(on_a, c))[0]["answer"] for c in ("c-dies", "c-left")]
        return stored == ["Half an answer", "Left alone"]

    await eventually(partials_saved)
    await instances.processes[1].kill()
    killed = time.monotonic()
    busy = await on_a.get("/agent/chat/stream", params={"query": "Now", "conversationId": "c-dies"})
    # Following the run before its death is noticed: it must end, not ping forever.
    replay = asyncio.create_task(resume(on_a, "c-left", 0))

    async def accepted() -> bool:
        params = {"query": "Try again", "conversationId": "c-dies"}
        async with on_a.stream("GET", "/agent/chat/stream", params=params) as response:
            if response.status_code == 409:
                return False
            assert response.status_code == 200
            return bool((await collect(response))[-1]["status"] == "completed")

    await eventually(accepted)
    freed_after = time.monotonic() - killed

    async def untouched_swept() -> bool:
        return bool((await history(on_a, "c-left"))[0]["status"] == "interrupted")

    await eventually(untouched_swept)
    swept_after = time.monotonic() - killed
    listed = (await on_a.get("/agent/runs")).json()["data"]
    replayed = await replay
    replay_ended_after = time.monotonic() - killed
    stored = {c: await history(on_a, c) for c in ("c-dies", "c-left")}

    assert busy.status_code == 409  # alive a moment ago: not taken before its deadline
    assert freed_after < DEAD_SECONDS + 3
    assert swept_after < DEAD_SECONDS + 3
    assert listed == []
    assert types(replayed) == ["start", "text", "complete"]
    assert replayed[-1]["status"] == "interrupted"
    assert replay_ended_after < DEAD_SECONDS + 6
    assert [(t["status"], t["answer"]) for t in stored["c-dies"]] == [
        ("interrupted", "Half an answer"),
        ("completed", "A fresh answer."),
    ]
    assert [(t["status"], t["answer"]) for t in stored["c-left"]] == [("interrupted", "Left alone")]


async def test_a_branch_chosen_on_one_instance_is_followed_by_a_stream_on_the_other(
    instances: Instances, fake_llm: FakeOpenAI
) -> None:
    on_a, on_b = await instances.start()
    await ask(on_a, "Q1", "c-tree")
    second = await ask(on_a, "Q2", "c-tree")
    q1 = (await history(on_a, "c-tree"))[0]["id"]
    params = {"query": "Q2 edited", "conversationId": "c-tree", "parentId": str(q1)}
    async with on_a.stream("GET", "/agent/chat/stream", params=params) as response:
        assert (await collect(response))[-1]["status"] == "completed"

    switched = await on_a.post("/session/c-tree/active", json={"turnId": second[0]["sessionId"]})
    mark = len(fake_llm.requests)
    await ask(on_b, "Q3", "c-tree")
    remembered = [m["content"] for body in fake_llm.requests[mark:] for m in body["messages"]]
    stored = await history(on_b, "c-tree")

    assert switched.status_code == 200
    assert [m["question"] for m in stored] == ["Q1", "Q2", "Q3"]
    assert "Q2" in remembered
    assert "Q2 edited" not in remembered
