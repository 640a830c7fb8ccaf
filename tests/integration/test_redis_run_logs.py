"""Run logs copied to Redis: what another instance reads back, trimming, expiry, restarts.

The owner's side is a real `RunLog` copied by `RedisRunLogs.publish`; the
other instance is a second `RedisRunLogs` on the same Redis, as in
production. Reads are compared byte for byte with the owner's own log.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from app.core.events import TextEvent
from app.tasks import Claim, EventLogReader, EventsGone, RedisRunLogs, RedisTaskManager, RunLog
from tests.support.processes import RedisServer

pytestmark = pytest.mark.redis

IDLE = 0.2


async def no_stop(user_id: str, conversation_id: str) -> bool:
    return False


@asynccontextmanager
async def instance(
    url: str, prefix: str, *, max_events: int = 1000, retention: float = 60
) -> AsyncIterator[tuple[RedisRunLogs, RedisTaskManager]]:
    """One instance's view of Redis: its shared run logs and its task manager."""
    tasks = RedisTaskManager(url, prefix, uuid.uuid4().hex[:6])
    await tasks.start(no_stop)
    logs = RedisRunLogs(
        url, prefix, tasks, ttl=30, retention=retention, max_events=max_events, max_idle=IDLE
    )
    try:
        yield logs, tasks
    finally:
        await logs.close()
        await tasks.close()


@asynccontextmanager
async def owned_run(
    url: str, prefix: str, *, max_events: int = 1000
) -> AsyncIterator[tuple[Claim, RunLog]]:
    """A claimed run whose log is being copied; closed, copied and released on exit."""
    claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
    log = RunLog()
    async with instance(url, prefix, max_events=max_events) as (owner, tasks):
        assert await tasks.claim(claim, 30)
        copier = asyncio.create_task(owner.publish(claim, log))
        try:
            yield claim, log
        finally:
            await tasks.release(claim)
            log.close()
            await copier


async def read_to_end(reader: EventLogReader, after: int) -> bytes:
    out = b""
    while not reader.finished(after):
        data, after = await reader.wait(after, IDLE)
        out += data
    return out


def append(log: RunLog, *words: str) -> None:
    for word in words:
        log.append(TextEvent(word))


async def test_another_instance_reads_exactly_the_events_after_an_id_live_to_the_end(
    redis_url: str, redis_prefix: str
) -> None:
    async with instance(redis_url, redis_prefix) as (other, _):
        async with owned_run(redis_url, redis_prefix) as (claim, log):
            append(log, "a", "b", "c", "d", "e")
            assert await other.latest("alice", "conv-1") == claim.task_id
            assert await other.latest("bob", "conv-1") is None
            reader = await other.reader("alice", "conv-1", claim.task_id, 2)
            assert reader is not None
            replayed, cursor = b"", 2
            while cursor < 5:
                data, cursor = await reader.wait(cursor, IDLE)
                replayed += data
            silent = await reader.wait(cursor, IDLE)
            append(log, "f", "g")
        # The run ended: the reader follows it to its end marker.
        rest = await read_to_end(reader, cursor)
        again = await other.reader("alice", "conv-1", claim.task_id, 0)
        assert again is not None
        whole = await read_to_end(again, 0)
        at_end = await other.reader("alice", "conv-1", claim.task_id, 7)
        assert at_end is not None

    assert replayed == b"".join(log.frames_after(2)[:3])
    assert replayed.startswith(b"id: 3\n")
    assert silent == (b"", 5)
    assert rest == log.read(5)
    assert whole == log.read(0)
    assert whole.count(b"data: ") == 7
    assert at_end.finished(7)


async def test_events_trimmed_from_the_stream_cannot_be_resumed(
    redis_url: str, redis_prefix: str
) -> None:
    async with instance(redis_url, redis_prefix) as (other, _):
        async with owned_run(redis_url, redis_prefix, max_events=100) as (claim, log):
            append(log, *(f"w{n}" for n in range(250)))
        with pytest.raises(EventsGone):
            await other.reader("alice", "conv-1", claim.task_id, 0)
        tail = await other.reader("alice", "conv-1", claim.task_id, 240)
        assert tail is not None
        assert await read_to_end(tail, 240) == log.read(240)


async def test_a_finished_run_is_found_until_its_retention_ends(
    redis_url: str, redis_prefix: str
) -> None:
    claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
    log = RunLog()
    append(log, "done")
    log.close()
    async with instance(redis_url, redis_prefix, retention=0.3) as (owner, _):
        await owner.publish(claim, log)
        found = await owner.latest("alice", "conv-1")
        kept = await owner.reader("alice", "conv-1", claim.task_id, 0)
        await asyncio.sleep(0.4)
        later = await owner.latest("alice", "conv-1")
        gone = await owner.reader("alice", "conv-1", claim.task_id, 0)

    assert found == claim.task_id
    assert kept is not None
    assert later is None
    assert gone is None


async def test_the_copy_is_whole_again_after_redis_restarts(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
    log = RunLog()
    async with instance(redis_server.url, redis_prefix) as (owner, tasks):
        assert await tasks.claim(claim, 30)
        copier = asyncio.create_task(owner.publish(claim, log))
        append(log, "before", "the")
        first = await owner.reader("alice", "conv-1", claim.task_id, 0)
        assert first is not None
        cursor = 0
        while cursor < 2:
            _, cursor = await first.wait(cursor, IDLE)
        # Copied; now Redis goes away and comes back empty.
        await asyncio.to_thread(redis_server.kill)
        append(log, "outage")
        await asyncio.sleep(0.1)
        await asyncio.to_thread(redis_server.start)
        append(log, "and", "after")
        log.close()
        async with asyncio.timeout(10):
            await copier
        reader = await owner.reader("alice", "conv-1", claim.task_id, 0)
        assert reader is not None
        copied = await read_to_end(reader, 0)

    assert copied == log.read(0)


async def test_a_long_run_read_live_from_the_start_arrives_whole_and_in_order(
    redis_url: str, redis_prefix: str
) -> None:
    async with instance(redis_url, redis_prefix) as (other, _):
        async with owned_run(redis_url, redis_prefix) as (claim, log):
            append(log, "first")
            reader = await other.reader("alice", "conv-1", claim.task_id, 0)
            assert reader is not None
            read, cursor = b"", 0
            for burst in range(5):  # bursts longer and shorter than a Stream entry holds
                append(log, *(f"b{burst}-{n}" for n in range(burst * 40)))
                while cursor < log.last_id and not reader.finished(cursor):
                    data, cursor = await reader.wait(cursor, IDLE)
                    read += data
        read += await read_to_end(reader, cursor)

    assert log.last_id == 401
    assert read == log.read(0)


async def test_a_copy_sent_again_over_what_redis_kept_is_read_without_repeats(
    redis_url: str, redis_prefix: str
) -> None:
    claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
    log = RunLog()
    async with instance(redis_url, redis_prefix) as (owner, tasks):
        assert await tasks.claim(claim, 30)
        # A copier that gave up part way (as after a timeout), then a new one from the start.
        first = asyncio.create_task(owner.publish(claim, log))
        append(log, *(f"w{n}" for n in range(10)))
        reader = await owner.reader("alice", "conv-1", claim.task_id, 0)
        assert reader is not None
        cursor = 0
        while cursor < 10 and not reader.finished(cursor):
            _, cursor = await reader.wait(cursor, IDLE)
        first.cancel()
        append(log, *(f"x{n}" for n in range(90)))
        await tasks.release(claim)
        log.close()
        await owner.publish(claim, log)
        again = await owner.reader("alice", "conv-1", claim.task_id, 0)
        assert again is not None
        copied = await read_to_end(again, 0)

    assert copied == log.read(0)
    assert copied.count(b"data: ") == 100
