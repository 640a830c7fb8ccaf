"""Concurrent callers' Redis commands share round trips, and each still gets its own replies.

Run against a redis-server of the test's own, so its connection count is
only this test's and the test may kill it.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from app.tasks.base import TaskBackendUnavailable
from app.tasks.redis.batch import Fill, SharedPipeline
from app.tasks.redis.client import RedisPipeline, connect, translate_errors
from tests.support.processes import RedisServer

pytestmark = pytest.mark.redis

CALLERS = 40


async def connections_received(server: RedisServer) -> int:
    """Connections the server accepted since it started, this question's own included."""
    client = connect(server.url, timeout=2.0, read_timeout=2.0)
    try:
        stats = await client.info("stats")
    finally:
        await client.aclose()
    return int(stats["total_connections_received"])


async def queued_caller(batch: SharedPipeline, fill: Fill) -> asyncio.Future[Any]:
    """A caller whose command is queued in `batch`, the batch not sent yet."""
    caller = asyncio.ensure_future(batch.command(fill))
    await asyncio.sleep(0)  # the caller's step: it queues its command and schedules the batch
    return caller


@asynccontextmanager
async def shared(
    server: RedisServer, batch_timeout: float = 2.0
) -> AsyncIterator[tuple[Redis, SharedPipeline]]:
    """A shared pipeline to the server, and a client of its own to look with."""
    client = connect(server.url, timeout=2.0, read_timeout=2.0)
    batch = SharedPipeline(server.url, timeout=batch_timeout)
    try:
        yield client, batch
    finally:
        await batch.close()
        await client.aclose()


async def test_concurrent_callers_share_one_connection_and_get_their_own_replies(
    redis_server: RedisServer,
) -> None:
    async def caller(batch: SharedPipeline, number: int) -> list[object]:
        def fill(pipe: RedisPipeline) -> None:
            pipe.set(f"key:{number}", f"value {number}")
            pipe.incrby("total", number)
            pipe.get(f"key:{number}")

        return await batch.execute(fill)

    async with shared(redis_server) as (client, batch):
        before = await connections_received(redis_server)
        replies = await asyncio.gather(*(caller(batch, n) for n in range(CALLERS)))
        after = await connections_received(redis_server)
        total = await client.get("total")

    assert [reply[0] for reply in replies] == [True] * CALLERS
    assert [reply[2] for reply in replies] == [f"value {n}" for n in range(CALLERS)]
    assert total == str(sum(range(CALLERS)))
    # One connection for all forty callers (and one for the question about connections):
    # each caller alone would have taken a connection of the pool for its round trip.
    assert after - before == 2


async def test_a_refused_command_is_its_callers_reply_and_fails_no_one_else(
    redis_server: RedisServer,
) -> None:
    async with shared(redis_server) as (client, batch):
        await client.set("text", "not a number")
        refused, counted = await asyncio.gather(
            batch.execute(lambda pipe: pipe.incr("text")),
            batch.command(lambda pipe: pipe.incr("counter")),
        )
        with pytest.raises(ResponseError):
            await batch.command(lambda pipe: pipe.incr("text"))

    assert isinstance(refused[0], ResponseError)
    assert counted == 1


async def test_closing_sends_what_is_queued_and_refuses_what_comes_after(
    redis_server: RedisServer,
) -> None:
    async with shared(redis_server) as (client, batch):
        queued = await queued_caller(batch, lambda pipe: pipe.set("last", "word"))
        await batch.close()
        with pytest.raises(RedisConnectionError):
            await batch.command(lambda pipe: pipe.get("last"))
        assert await queued is True
        assert await client.get("last") == "word"


async def test_a_lost_server_fails_every_caller_of_the_batch(redis_server: RedisServer) -> None:
    async def caller(batch: SharedPipeline, number: int) -> None:
        with translate_errors("the test's server"):
            await batch.command(lambda pipe: pipe.set(f"key:{number}", "value"))

    async with shared(redis_server) as (_, batch):
        await batch.command(lambda pipe: pipe.ping())
        redis_server.kill()
        outcomes = await asyncio.gather(
            *(caller(batch, n) for n in range(5)), return_exceptions=True
        )

    assert all(isinstance(outcome, TaskBackendUnavailable) for outcome in outcomes), outcomes


async def test_a_server_that_stops_answering_fails_the_batch_after_its_timeout(
    redis_server: RedisServer,
) -> None:
    async def doomed(batch: SharedPipeline) -> None:
        with translate_errors("the test's server"):
            await batch.command(lambda pipe: pipe.set("key", "value"))

    async with shared(redis_server, batch_timeout=0.3) as (_, batch):
        await batch.command(lambda pipe: pipe.ping())
        redis_server.freeze()
        try:
            # Replies carry no timeout of their own: the batch's is all that ends the wait.
            with pytest.raises(TaskBackendUnavailable, match="TimeoutError"):
                await asyncio.wait_for(doomed(batch), 10)
        finally:
            redis_server.thaw()
        # The timed-out connection is dropped: its late reply is no one else's.
        assert await batch.command(lambda pipe: pipe.echo("after")) == "after"


async def test_a_batch_after_a_restart_of_the_server_is_sent_again_and_answered(
    redis_server: RedisServer,
) -> None:
    """The pooled connection the restart broke is noticed on use: one retry, no error."""
    async with shared(redis_server) as (_, batch):
        await batch.command(lambda pipe: pipe.set("before", "restart"))
        redis_server.kill()
        redis_server.start()
        replies = await batch.execute(lambda pipe: (pipe.set("after", "restart"), pipe.echo("ok")))

    assert replies == [True, "ok"]


async def test_a_batch_cancelled_before_it_leaves_cancels_its_callers_and_the_next_one_leaves(
    redis_server: RedisServer,
) -> None:
    """As at a shutdown that cancels every task: no caller is left waiting for ever."""
    async with shared(redis_server) as (client, batch):
        queued = await queued_caller(batch, lambda pipe: pipe.set("lost", "word"))
        (sending,) = [t for t in asyncio.all_tasks() if "SharedPipeline._send" in repr(t)]
        sending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(queued, 5)
        answer = await asyncio.wait_for(batch.command(lambda pipe: pipe.set("next", "one")), 5)

        assert answer is True
        assert await client.get("lost") is None


async def test_new_connections_do_not_read_the_installed_packages_each(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """redis-py looks its own version up in site-packages' metadata for every connection it
    opens (a millisecond each, paid by each connection a burst of turns opens): ours is
    read once for the process."""
    looked_up = 0
    version = importlib.metadata.version

    def counted(package: str) -> str:
        nonlocal looked_up
        looked_up += 1
        return version(package)

    # redis-py asks `importlib.metadata` (the module), so this is what it calls.
    monkeypatch.setattr(importlib.metadata, "version", counted)
    clients = [connect(redis_server.url, timeout=2.0, read_timeout=2.0) for _ in range(3)]
    try:
        # Ten connections of each client open at once.
        await asyncio.gather(
            *(c.blpop(["nothing"], timeout=0.05) for c in clients for _ in range(10))
        )
        assert await connections_received(redis_server) >= 31
    finally:
        for client in clients:
            await client.aclose()
    assert looked_up <= 1
