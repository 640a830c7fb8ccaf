"""One contract for every event-log reader, then what only the Redis copy does.

An SSE response reads a run's log through `EventLogReader` and cannot tell
where the log is kept: in this process (`RunLog` itself) or in Redis, copied
by the owner's `RedisRunLogs.publish` and read by another instance's
`RedisStreamReader`. The contract runs against both, so the two cannot drift
apart; reads are compared byte for byte with the owner's own log. The
Redis-only tests below it cover what the in-process log has no need of: the
run found by its conversation, trimming, retention, a Redis restart.

Waits that must end on an event use `LONG` as their idle time and fail
after half of it, so they prove a wake-up without racing a busy machine.
"""

from __future__ import annotations

import asyncio
import gc
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

import pytest

from app.core.events import CompleteEvent, Event, RunStatus, TextEvent
from app.core.run import Conclusion, Notice, StopSignal
from app.tasks import Claim, Claims, EventLogReader, EventsGone, RunLog
from app.tasks.redis.backend import redis_tasks
from app.tasks.redis.log import RedisRunLogs
from app.tasks.redis.target import RedisTarget
from app.tasks.runs import RunRegistry
from tests.integration.test_task_managers import redis_target
from tests.support.polling import eventually
from tests.support.processes import RedisServer

IDLE = 0.2
"""A reader's idle time where nothing is expected to come."""
LONG = 60.0
"""A reader's idle time where something must come: far longer than any test waits."""


class LoggedRun(Protocol):
    """A run's log as its owner writes it, and readers of it as responses get them."""

    log: RunLog

    async def reader(self, after: int) -> EventLogReader:
        """A reader from event `after` on."""
        ...

    async def end(self) -> None:
        """End the run as the registry does: its claim released, then its log closed."""
        ...


class InProcessRun:
    """The log read where it is written: each response reads the `RunLog` itself."""

    def __init__(self) -> None:
        self.log = RunLog()

    async def reader(self, after: int) -> EventLogReader:
        return self.log

    async def end(self) -> None:
        self.log.close()


class RedisRun:
    """The log copied to Redis by its owner and read by another instance."""

    def __init__(
        self,
        log: RunLog,
        claim: Claim,
        tasks: Claims,
        copier: asyncio.Task[bool],
        other: RedisRunLogs,
    ) -> None:
        self.log = log
        self._claim = claim
        self._tasks = tasks
        self._copier = copier
        self._other = other

    async def reader(self, after: int) -> EventLogReader:
        claim = self._claim
        reader = await self._other.reader(
            claim.user_id, claim.conversation_id, claim.task_id, after
        )
        assert reader is not None
        return reader

    async def end(self) -> None:
        await self._tasks.release(self._claim)
        self.log.close()
        await self._copier


async def no_stop(user_id: str, conversation_id: str) -> bool:
    return False


@asynccontextmanager
async def instance(
    url: RedisTarget | str,
    prefix: str,
    *,
    max_events: int = 1000,
    retention: float = 60,
    max_idle: float = IDLE,
) -> AsyncIterator[tuple[RedisRunLogs, Claims]]:
    """One instance's view of Redis: its shared run logs and its claims."""
    instance_id = uuid.uuid4().hex[:6]
    tasks = redis_tasks(url, prefix, instance_id)
    await tasks.backend.start(no_stop)
    logs = RedisRunLogs(
        url,
        prefix,
        tasks.claims,
        instance_id=instance_id,
        releaser=tasks.batch_release,
        ttl=30,
        retention=retention,
        max_events=max_events,
        max_idle=max_idle,
    )
    try:
        yield logs, tasks.claims
    finally:
        await logs.close()
        await tasks.backend.close()


@asynccontextmanager
async def owned_run(
    url: RedisTarget | str, prefix: str, *, max_events: int = 1000
) -> AsyncIterator[tuple[Claim, RunLog, Claims, asyncio.Task[bool]]]:
    """A claimed run whose log is being copied; closed, copied and released on exit."""
    claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
    log = RunLog()
    async with instance(url, prefix, max_events=max_events) as (owner, tasks):
        assert await tasks.claim(claim, 30)
        copier = asyncio.create_task(owner.publish(claim, log))
        try:
            yield claim, log, tasks, copier
        finally:
            await tasks.release(claim)
            log.close()
            await copier


@pytest.fixture(
    params=[
        "in-process",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("redis-cluster", marks=pytest.mark.redis),
    ]
)
async def run(request: pytest.FixtureRequest) -> AsyncIterator[LoggedRun]:
    if request.param == "in-process":
        yield InProcessRun()
        return
    url = redis_target(request)
    prefix: str = request.getfixturevalue("redis_prefix")
    # The reader may block on Redis as long as it is asked to, as a response's does.
    async with (
        instance(url, prefix, max_idle=LONG) as (other, _),
        owned_run(url, prefix) as (claim, log, tasks, copier),
    ):
        yield RedisRun(log, claim, tasks, copier, other)


async def read_until(reader: EventLogReader, after: int, last: int) -> tuple[bytes, int]:
    """What the reader gives from `after` until it has event `last` (or the log ended)."""
    out = b""
    while after < last and not reader.finished(after):
        data, after = await reader.wait(after, IDLE)
        out += data
    return out, after


async def read_to_end(reader: EventLogReader, after: int) -> bytes:
    out = b""
    while not reader.finished(after):
        data, after = await reader.wait(after, IDLE)
        out += data
    return out


def append(log: RunLog, *words: str) -> None:
    for word in words:
        log.append(TextEvent(word))


# The contract, for every reader.


async def test_a_reader_from_the_start_gets_every_event_in_order(run: LoggedRun) -> None:
    append(run.log, "a", "b", "c", "d", "e")

    data, cursor = await read_until(await run.reader(0), 0, 5)

    assert cursor == 5
    assert data == run.log.read(0)
    assert data.startswith(b"id: 1\n")
    assert data.count(b"data: ") == 5


async def test_a_reader_after_an_id_gets_exactly_the_events_that_follow_it(
    run: LoggedRun,
) -> None:
    append(run.log, "a", "b", "c", "d", "e")

    data, cursor = await read_until(await run.reader(2), 2, 5)

    assert cursor == 5
    assert data == b"".join(run.log.frames_after(2))
    assert data.startswith(b"id: 3\n")
    assert b'"b"' not in data


async def test_a_silent_log_gives_nothing_after_the_idle_time_so_the_response_pings(
    run: LoggedRun,
) -> None:
    append(run.log, "a", "b")
    reader = await run.reader(2)

    assert await reader.wait(2, IDLE) == (b"", 2)
    assert not reader.finished(2)


async def test_a_waiting_reader_wakes_for_new_events_before_its_idle_time_is_up(
    run: LoggedRun,
) -> None:
    append(run.log, "a")
    reader = await run.reader(1)
    waiting = asyncio.create_task(reader.wait(1, LONG))
    await asyncio.sleep(0)  # the reader starts waiting
    assert not waiting.done()

    append(run.log, "b")
    async with asyncio.timeout(LONG / 2):
        data, cursor = await waiting

    assert (data, cursor) == (run.log.read(1), 2)


async def test_a_live_reader_follows_the_log_to_its_end(run: LoggedRun) -> None:
    reader = await run.reader(0)
    append(run.log, "a", "b")
    first, cursor = await read_until(reader, 0, 2)
    append(run.log, "c")
    await run.end()
    rest = await read_to_end(reader, cursor)
    async with asyncio.timeout(LONG / 2):
        after_the_end = await reader.wait(3, LONG)

    assert first + rest == run.log.read(0)
    assert rest.startswith(b"id: 3\n")
    assert reader.finished(3)
    assert after_the_end == (b"", 3)


async def test_ending_the_log_wakes_a_waiting_reader_which_then_ends(run: LoggedRun) -> None:
    append(run.log, "a")
    reader = await run.reader(1)
    waiting = asyncio.create_task(reader.wait(1, LONG))
    await asyncio.sleep(0)  # the reader starts waiting

    await run.end()
    async with asyncio.timeout(LONG / 2):
        data, cursor = await waiting

    assert (data, cursor) == (b"", 1)
    assert reader.finished(cursor)


async def test_a_reader_of_an_ended_log_gets_it_whole_and_one_at_its_end_gets_nothing(
    run: LoggedRun,
) -> None:
    append(run.log, "a", "b", "c")
    await run.end()

    whole = await read_to_end(await run.reader(0), 0)
    at_end = await run.reader(3)
    async with asyncio.timeout(LONG / 2):
        nothing = await at_end.wait(3, LONG)

    assert whole == run.log.read(0)
    assert whole.count(b"data: ") == 3
    assert at_end.finished(3)
    assert nothing == (b"", 3)


async def test_a_long_run_read_live_from_the_start_arrives_whole_and_in_order(
    run: LoggedRun,
) -> None:
    append(run.log, "first")
    reader = await run.reader(0)
    read, cursor = b"", 0
    for burst in range(5):  # bursts longer and shorter than a Redis Stream entry holds
        append(run.log, *(f"b{burst}-{n}" for n in range(burst * 40)))
        data, cursor = await read_until(reader, cursor, run.log.last_id)
        read += data
    await run.end()
    read += await read_to_end(reader, cursor)

    assert run.log.last_id == 401
    assert read == run.log.read(0)


# Redis only: the run found from another instance, trimming, retention, restarts.


@pytest.mark.redis
async def test_another_instance_finds_the_run_by_its_conversation(
    redis_url: str, redis_prefix: str
) -> None:
    async with (
        instance(redis_url, redis_prefix) as (other, _),
        owned_run(redis_url, redis_prefix) as (claim, log, _, _),
    ):
        append(log, "a")
        found = await other.latest("alice", "conv-1")
        of_another_user = await other.latest("bob", "conv-1")
        unknown = await other.reader("alice", "conv-1", uuid.uuid4().hex, 0)

    assert found == claim.task_id
    assert of_another_user is None
    assert unknown is None


@pytest.mark.redis
async def test_events_trimmed_from_the_stream_cannot_be_resumed(
    redis_url: str, redis_prefix: str
) -> None:
    async with instance(redis_url, redis_prefix) as (other, _):
        async with owned_run(redis_url, redis_prefix, max_events=100) as (claim, log, _, _):
            append(log, *(f"w{n}" for n in range(250)))
        with pytest.raises(EventsGone):
            await other.reader("alice", "conv-1", claim.task_id, 0)
        tail = await other.reader("alice", "conv-1", claim.task_id, 240)
        assert tail is not None
        assert await read_to_end(tail, 240) == log.read(240)


RETENTION = 1.0
"""Long enough for three reads right after the run ends, on a busy machine."""


@pytest.mark.redis
async def test_a_finished_run_is_found_until_its_retention_ends(
    redis_url: str, redis_prefix: str
) -> None:
    claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
    log = RunLog()
    append(log, "done")
    log.close()
    async with instance(redis_url, redis_prefix, retention=RETENTION) as (owner, _):
        await owner.publish(claim, log)
        found = await owner.latest("alice", "conv-1")
        kept = await owner.reader("alice", "conv-1", claim.task_id, 0)

        # Retention runs on Redis's clock, as the keys' TTLs.
        async def forgotten() -> bool:
            return await owner.latest("alice", "conv-1") is None

        await eventually(forgotten, within=RETENTION + 5.0, what="the run's logs forgotten")
        gone = await owner.reader("alice", "conv-1", claim.task_id, 0)

    assert found == claim.task_id
    assert kept is not None
    assert gone is None


@pytest.mark.redis
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
        await read_until(first, 0, 2)
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


@pytest.mark.redis
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
        await read_until(reader, 0, 10)
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


async def test_a_copier_stopped_with_a_copy_on_its_way_leaves_no_unread_failure(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    """A gated event queues its copy as it is appended; a run stopped in that same step leaves
    the copy's outcome to nobody. Redis failing it must not end as asyncio's "Future exception
    was never retrieved" in the log, an error report for nothing that went wrong."""
    claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
    log = RunLog()
    log.gate()
    unhandled: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: unhandled.append(context))
    try:
        async with instance(redis_server.url, redis_prefix) as (owner, tasks):
            assert await tasks.claim(claim, 30)
            copier = asyncio.create_task(owner.publish(claim, log))
            append(log, "copied")
            async with asyncio.timeout(10):
                await log.durable()  # the copier now waits for the next event
            await asyncio.to_thread(redis_server.kill)
            append(log, "lost")  # its copy is queued in this step...
            copier.cancel()  # ...and the run stops before the copier reads the reply
            with pytest.raises(asyncio.CancelledError):
                await copier
        # Closing the instance waited for the batch, which Redis (gone) failed.
        del copier
        gc.collect()
    finally:
        loop.set_exception_handler(None)

    assert [c.get("message") for c in unhandled] == []


class TwoWords:
    """A run that is over at once: two words, then its `complete`."""

    async def events(self, stop: StopSignal) -> AsyncGenerator[Event]:
        yield TextEvent("two")
        yield TextEvent(" words")

    async def conclude(self, stopped: RunStatus | None, notice: Notice) -> Conclusion:
        return Conclusion(CompleteEvent("completed", 1, 2))

    def movable(self) -> bool:
        return False

    async def moved(self, handed_over: bool) -> None:
        return None


@pytest.mark.redis
async def test_complete_shows_only_once_every_instance_can_read_the_whole_run(
    redis_url: str, redis_prefix: str
) -> None:
    """A client that reads `complete` may resume on another instance at once (say, after
    its connection dropped on the last frame): the copy must already hold the run."""
    async with (
        instance(redis_url, redis_prefix) as (owner, tasks),
        instance(redis_url, redis_prefix) as (other, _),
    ):
        registry = RunRegistry(tasks, ttl=30, retention=60, shared=owner)
        claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
        assert await tasks.claim(claim, 30)
        run = registry.launch(claim, TwoWords())
        local = await read_to_end(run.log, 0)

        assert await other.latest("alice", "conv-1") == claim.task_id
        reader = await other.reader("alice", "conv-1", claim.task_id, 0)
        assert reader is not None
        assert await read_to_end(reader, 0) == local
        assert local.count(b"\n\n") == 3
        await registry.shutdown()
