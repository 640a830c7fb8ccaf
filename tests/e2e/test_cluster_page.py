"""The chat page behind a load balancer, while instances go away under it.

Instances as deployed (uvicorn processes) behind HAProxy, on PostgreSQL and a
Redis of the test's own (`Cluster`); the page is loaded from HAProxy, as a
user reaches the service. The model writes each answer a word at a time
(`SlowWriter`), so a turn lasts seconds: long enough to kill the instance
streaming it, or to ask while another instance drains.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Page, Request, Response, Route, expect

from app.agents.agent_turn import MOVED_NOTICE
from tests.e2e.conftest import LOOP, Upstreams
from tests.e2e.test_chat_page import ask
from tests.integration.service import history, process_env
from tests.support.cluster import Cluster
from tests.support.moving_turns import SlowWriter, answer_for
from tests.support.polling import eventually
from tests.support.processes import RedisServer

pytestmark = [LOOP, pytest.mark.postgres]

WORDS = 20
PAUSE = 0.3
"""Twenty words 0.3 s apart: six-second answers."""
TURN_MS = 45_000
"""Longest wait for a whole answer: six seconds, a move or resends, on a shared machine."""


@pytest_asyncio.fixture(loop_scope="package")
async def cluster(
    tmp_path: Path, postgres_url: str, upstreams: Upstreams
) -> AsyncIterator[Cluster]:
    """Instances behind HAProxy on the fake model (`SlowWriter`); `start()` starts them."""
    upstreams.llm.responder = SlowWriter(WORDS, PAUSE)
    redis = RedisServer(tmp_path)
    redis.start()
    instances = Cluster(
        tmp_path,
        {
            "DATABASE_URL": postgres_url,
            "REDIS_URL": redis.url,
            **process_env(upstreams.llm, upstreams.search),
            "INSTANCE_DEAD_SECONDS": "2",
            "PARTIAL_SAVE_SECONDS": "0.5",
            "DB_POOL_SIZE": "3",
            "LOG_LEVEL": "WARNING",
        },
    )
    try:
        yield instances
    finally:
        await instances.close()
        redis.kill()


async def test_the_page_resumes_an_answer_whose_instance_was_killed(
    page: Page, cluster: Cluster
) -> None:
    client = await cluster.start(3)
    resumed_after: list[int] = []

    def watch(request: Request) -> None:
        if "/agent/resume" in request.url:
            resumed_after.append(int(request.headers.get("last-event-id") or 0))

    page.on("request", watch)
    await page.goto(cluster.url)
    turn = await ask(page, "Tell me")
    await expect(turn.locator(".answer")).to_contain_text("Tell me-2")
    await cluster.instance(await cluster.serving()).kill()

    await expect(turn).to_have_attribute("data-status", "completed", timeout=TURN_MS)
    answer = answer_for("Tell me", WORDS)
    await expect(turn.locator(".answer")).to_have_text(answer)
    await expect(turn.locator(".error")).to_be_hidden()
    await turn.locator(".thinking summary").click()
    await expect(turn.locator(".thinking-text")).to_contain_text(MOVED_NOTICE)
    (record,) = (await client.get("/session/list")).json()["data"]["records"]
    (stored,) = await history(client, record["conversationId"])
    assert (stored["status"], stored["answer"]) == ("completed", answer)
    # It went on after the events it had shown, not from the start again.
    assert resumed_after
    assert resumed_after[0] >= 3, resumed_after


async def test_a_question_refused_by_a_draining_instance_is_sent_again(
    page: Page, cluster: Cluster
) -> None:
    client = await cluster.start(2, DRAIN_SECONDS="30")
    draining = cluster.instance("a")
    # A turn keeps the instance draining: it finishes it before it goes.
    async with httpx.AsyncClient(base_url=draining.url, timeout=30) as direct:
        held = asyncio.create_task(
            direct.get("/agent/chat/stream", params={"query": "Hold", "conversationId": "c-hold"})
        )
        await eventually(lambda: running(direct, "c-hold"), within=10, what="the held turn")
        draining.terminate()

        async def not_ready() -> bool:
            return (await direct.get("/ready")).status_code == 503

        await eventually(not_ready, within=5, what="/ready answering 503")
        # The page's first try reaches the draining instance, as through a load balancer
        # that does not retry a 503 itself; the tries after it go through HAProxy.
        answers: list[Response] = []
        page.on("response", lambda r: answers.append(r) if "/agent/chat/stream" in r.url else None)
        await page.route("**/agent/chat/stream*", to_the_draining(draining.url))
        await page.goto(cluster.url)
        turn = await ask(page, "Tell me")

        await expect(turn).to_have_attribute("data-status", "completed", timeout=TURN_MS)
        await expect(turn.locator(".answer")).to_have_text(answer_for("Tell me", WORDS))
        await expect(turn.locator(".error")).to_be_hidden()
        held_answer = await held

    refused = answers[0]
    assert (refused.status, (await refused.json())["data"]) == (503, {"error": "DRAINING"})
    assert [a.status for a in answers[1:]] == [200]
    assert held_answer.status_code == 200
    conversations = (await client.get("/session/list")).json()["data"]["records"]
    # Asked once: the refusal stored nothing.
    assert sorted(c["question"] for c in conversations) == ["Hold", "Tell me"]


def to_the_draining(instance_url: str) -> Callable[[Route], Awaitable[None]]:
    """A route handler sending the first request to `instance_url`, the others on."""
    first = [True]

    async def handle(route: Route) -> None:
        if not first[0]:
            await route.continue_()
            return
        first[0] = False
        parts = urlsplit(route.request.url)
        response = await route.fetch(url=f"{instance_url}{parts.path}?{parts.query}")
        await route.fulfill(response=response)

    return handle


async def running(client: httpx.AsyncClient, conversation: str) -> bool:
    runs = (await client.get("/agent/runs")).json()["data"]
    return any(run["conversationId"] == conversation for run in runs)
