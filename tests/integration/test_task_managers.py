"""One contract for both task backends, then what only Redis can do: several instances, outages.

The contract runs against the in-process roles and the Redis ones alike, so
the in-process reference and Redis cannot drift apart. The Redis-only tests
use two backends on one Redis as two instances of the service, and one test
owns a private `redis-server` it kills and restarts. A TTL passes at once on
the in-process backend's test clock; on Redis it runs on Redis's clock, and
what it frees is polled for, as an instance's death is. One sleep makes an
outage last, one shows a slow heartbeat is not a death: durations by nature.
Where a test shows that a call returned on an event rather than on a
timeout, the timeout is long and the bound is half of it: a loaded two-core
CI still passes, and how fast it is lives in bench/.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest
import redis.asyncio

from app.config import Settings
from app.tasks import (
    Claim,
    TaskBackendUnavailable,
    Tasks,
    build_tasks,
    in_process_tasks,
)
from app.tasks.base import DeadInstances
from app.tasks.redis.backend import redis_tasks
from app.tasks.redis.target import RedisTarget
from tests.support.clock import TestClock
from tests.support.logs import attached
from tests.support.polling import eventually
from tests.support.processes import RedisServer, free_port
from tests.support.redis_topologies import ClusterNodes

TTL = 30.0
SHORT_TTL = 0.3
STOP_WAIT = 30.0
PROMPTLY = STOP_WAIT / 2
"""Far below a wait that ran out, far above any scheduling delay."""


def new_claim(user_id: str = "alice", conversation_id: str = "conv-1") -> Claim:
    return Claim(user_id, conversation_id, task_id=uuid.uuid4().hex, agent_type="chat")


class Runs:
    """The owning instance's side: one run per claim, releasing it as it unwinds, like the API's."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks
        self.running: dict[tuple[str, str], asyncio.Task[None]] = {}
        self.stops: list[tuple[str, str]] = []
        """Every (user, conversation) the stop handler was called with."""

    async def begin(self, claim: Claim) -> asyncio.Task[None]:
        """Return once the run is in its body: a task cancelled before that runs no `finally`."""
        inside = asyncio.Event()

        async def run() -> None:
            try:
                inside.set()
                await asyncio.Event().wait()
            finally:
                await self.tasks.claims.release(claim)

        task = asyncio.create_task(run())
        self.running[(claim.user_id, claim.conversation_id)] = task
        await inside.wait()
        return task

    async def on_stop(self, user_id: str, conversation_id: str) -> bool:
        self.stops.append((user_id, conversation_id))
        task = self.running.pop((user_id, conversation_id), None)
        if task is None:
            return False
        task.cancel()
        return True

    async def cancel_all(self) -> None:
        for task in self.running.values():
            task.cancel()
        await asyncio.gather(*self.running.values(), return_exceptions=True)


async def ended_by_cancel(run: asyncio.Task[None]) -> bool:
    """Whether the run was cancelled; it may still be finishing the release the stop waited for."""
    await asyncio.wait([run], timeout=PROMPTLY)
    return run.cancelled()


@asynccontextmanager
async def started(tasks: Tasks) -> AsyncIterator[Runs]:
    runs = Runs(tasks)
    await tasks.backend.start(runs.on_stop)
    try:
        yield runs
    finally:
        await runs.cancel_all()
        await tasks.backend.close()


@dataclass(frozen=True, slots=True)
class Backend:
    tasks: Tasks
    runs: Runs
    clock: TestClock | None
    """The in-process backend's clock; None on Redis, whose TTLs run on its own clock."""

    async def after(self, ttl: float, check: Callable[[], Awaitable[bool]]) -> None:
        """Let `ttl` pass until `check` holds: at once on the test clock, else as Redis's runs."""
        if self.clock is not None:
            self.clock.advance(ttl)
        await eventually(check, within=ttl + 5.0, what=f"the state {ttl:g} s on")


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("redis-cluster", marks=pytest.mark.redis),
    ]
)
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "memory":
        clock = TestClock()
        async with started(in_process_tasks(clock)) as runs:
            yield Backend(runs.tasks, runs, clock)
        return
    prefix: str = request.getfixturevalue("redis_prefix")
    async with started(redis_tasks(redis_target(request), prefix, "instance-a")) as runs:
        yield Backend(runs.tasks, runs, None)


def redis_target(request: pytest.FixtureRequest) -> RedisTarget | str:
    """The shared Redis for a `redis` parameter, the run's Cluster for `redis-cluster`."""
    if request.param == "redis-cluster":
        cluster: ClusterNodes = request.getfixturevalue("redis_cluster")
        return cluster.target
    url: str = request.getfixturevalue("redis_url")
    return url


def instances(tasks: Tasks) -> DeadInstances:
    assert tasks.instances is not None, "only Redis knows other instances"
    return tasks.instances


# The contract, for both backends.


async def test_claim_refused_while_held(backend: Backend) -> None:
    tasks = backend.tasks
    first, second = new_claim(), new_claim()

    assert await tasks.claims.claim(first, TTL)
    assert not await tasks.claims.claim(second, TTL)
    assert await tasks.claims.current("alice", "conv-1") == first
    assert await tasks.claims.claim(new_claim(conversation_id="conv-2"), TTL)
    assert await tasks.claims.claim(new_claim(user_id="bob"), TTL)


async def test_current_is_none_for_unknown_conversation(backend: Backend) -> None:
    tasks = backend.tasks

    assert await tasks.claims.current("alice", "never-claimed") is None


async def test_release_only_by_owner(backend: Backend) -> None:
    tasks = backend.tasks
    owner, other = new_claim(), new_claim()
    assert await tasks.claims.claim(owner, TTL)

    await tasks.claims.release(other)
    assert await tasks.claims.current("alice", "conv-1") == owner
    assert not await tasks.claims.refresh(other, TTL)

    await tasks.claims.release(owner)
    assert await tasks.claims.current("alice", "conv-1") is None
    assert await tasks.claims.claim(other, TTL)


async def test_claim_expires_without_refresh(backend: Backend) -> None:
    tasks = backend.tasks
    lapsing, kept = new_claim(), new_claim(conversation_id="conv-2")
    # Both live long until the refresh sets the short TTL: a pause before it cannot lose them.
    assert await tasks.claims.claim(lapsing, TTL)
    assert await tasks.claims.claim(kept, TTL)
    assert await tasks.claims.refresh(lapsing, SHORT_TTL)

    async def lapsed() -> bool:
        return await tasks.claims.current("alice", "conv-1") is None

    await backend.after(SHORT_TTL, lapsed)
    assert await tasks.claims.current("alice", "conv-2") == kept
    retaken = new_claim()
    assert await tasks.claims.claim(retaken, TTL)
    assert not await tasks.claims.refresh(lapsing, TTL)
    await tasks.claims.release(lapsing)
    assert await tasks.claims.current("alice", "conv-1") == retaken


async def test_request_stop_returns_once_run_released(backend: Backend) -> None:
    tasks, runs = backend.tasks, backend.runs
    claim = new_claim()
    assert await tasks.claims.claim(claim, TTL)
    run = await runs.begin(claim)

    started_at = time.monotonic()
    assert await tasks.claims.request_stop("alice", "conv-1", STOP_WAIT)

    assert time.monotonic() - started_at < PROMPTLY
    assert runs.stops == [("alice", "conv-1")]
    assert await ended_by_cancel(run)
    assert await tasks.claims.current("alice", "conv-1") is None
    assert await tasks.claims.claim(new_claim(), TTL)


async def test_request_stop_on_nothing_returns_false(backend: Backend) -> None:
    tasks, runs = backend.tasks, backend.runs
    claim = new_claim()
    assert await tasks.claims.claim(claim, TTL)
    await runs.begin(claim)
    assert await tasks.claims.request_stop("alice", "conv-1", STOP_WAIT)

    started_at = time.monotonic()
    assert not await tasks.claims.request_stop("alice", "conv-1", STOP_WAIT)
    assert not await tasks.claims.request_stop("alice", "unknown", STOP_WAIT)

    assert time.monotonic() - started_at < PROMPTLY
    assert runs.stops == [("alice", "conv-1")]


async def test_request_stop_waits_at_most_wait(backend: Backend) -> None:
    tasks, runs = backend.tasks, backend.runs
    # Claimed, but no run here answers the stop (its instance died): only the TTL frees it.
    assert await tasks.claims.claim(new_claim(), TTL)

    started_at = time.monotonic()
    assert await tasks.claims.request_stop("alice", "conv-1", 0.2)

    # Returned after its wait, not when the claim's TTL finally ran out.
    assert 0.15 < time.monotonic() - started_at < TTL / 2
    assert runs.stops == [("alice", "conv-1")]


async def test_users_are_isolated(backend: Backend) -> None:
    tasks, runs = backend.tasks, backend.runs
    alices = new_claim(user_id="alice")
    assert await tasks.claims.claim(alices, TTL)
    run = await runs.begin(alices)

    assert not await tasks.claims.request_stop("bob", "conv-1", STOP_WAIT)
    assert await tasks.claims.current("bob", "conv-1") is None

    assert runs.stops == []
    assert not run.done()
    assert await tasks.claims.current("alice", "conv-1") == alices


# Choosing the backend.


async def test_factory_uses_redis_only_when_configured(redis_prefix: str) -> None:
    alone = build_tasks(Settings(redis_url=""), "a")
    assert (alone.batch_release, alone.instances) == (None, None)

    # Building connects to nothing: an address that cannot resolve proves it.
    settings = Settings(redis_url="redis://redis.invalid:6379/0", redis_prefix=redis_prefix)
    shared = build_tasks(settings, "a")
    assert shared.batch_release is not None
    assert instances(shared).instance_id == "a"
    await shared.backend.close()


# Redis only: several instances, and Redis going away.


@pytest.mark.redis
async def test_a_live_instance_is_never_judged_dead_whatever_the_judges_settings(
    redis_url: str, redis_prefix: str
) -> None:
    quick = redis_tasks(redis_url, redis_prefix, "instance-quick", dead_after=0.3)
    slow = redis_tasks(redis_url, redis_prefix, "instance-slow", dead_after=3.0)
    async with started(quick), started(slow):
        claim = new_claim()
        assert await slow.claims.claim(claim, TTL)
        # Five of the quick one's lifetimes; the slow one beats every 0.6 s.
        await asyncio.sleep(1.5)
        judged = await instances(quick).dead_instances({"instance-slow"}, TTL)
        taken = await quick.claims.claim(new_claim(), TTL)
        current = await quick.claims.current("alice", "conv-1")

    assert judged == []
    assert not taken
    assert current == claim


@pytest.mark.redis
async def test_a_dead_instances_claims_are_free_once_its_own_deadline_passed(
    redis_url: str, redis_prefix: str
) -> None:
    judge = redis_tasks(redis_url, redis_prefix, "instance-a", dead_after=30.0)
    dying = redis_tasks(redis_url, redis_prefix, "instance-b", dead_after=0.5)
    async with started(judge):
        async with started(dying):
            assert await dying.claims.claim(new_claim(), TTL)
        # Closed without releasing, as a killed instance: it beats no more.
        refused_at_once = not await judge.claims.claim(new_claim(), TTL)

        async def judged_dead() -> bool:
            return await instances(judge).dead_instances(set(), TTL) == ["instance-b"]

        dead_after = await eventually(judged_dead)
        asked = time.monotonic()
        stopped = await judge.claims.request_stop("alice", "conv-1", STOP_WAIT)
        stop_answered_after = time.monotonic() - asked
        taken = await judge.claims.claim(new_claim(), TTL)

    assert refused_at_once
    assert dead_after < 0.5 + 1.0
    assert not stopped
    assert stop_answered_after < PROMPTLY
    assert taken


@pytest.mark.redis
async def test_stop_reaches_the_owning_instance(redis_url: str, redis_prefix: str) -> None:
    owner = redis_tasks(redis_url, redis_prefix, "instance-a")
    other = redis_tasks(redis_url, redis_prefix, "instance-b")
    async with started(owner) as owner_runs, started(other):
        claim = new_claim()
        assert await owner.claims.claim(claim, TTL)
        run = await owner_runs.begin(claim)

        started_at = time.monotonic()
        assert await other.claims.request_stop("alice", "conv-1", STOP_WAIT)

        assert time.monotonic() - started_at < PROMPTLY
        assert await ended_by_cancel(run)
        assert owner_runs.stops == [("alice", "conv-1")]
        assert await other.claims.current("alice", "conv-1") is None


async def test_unreachable_redis_fails_fast(redis_prefix: str) -> None:
    url = f"redis://:s3cret-password@127.0.0.1:{free_port()}/0"
    tasks = redis_tasks(url, redis_prefix, "instance-a")
    try:
        started_at = time.monotonic()
        await tasks.backend.start(Runs(tasks).on_stop)
        with pytest.raises(TaskBackendUnavailable) as raised:
            await tasks.claims.claim(new_claim(), TTL)
        with pytest.raises(TaskBackendUnavailable):
            await tasks.backend.ping()
        with pytest.raises(TaskBackendUnavailable):
            await tasks.claims.request_stop("alice", "conv-1", STOP_WAIT)

        assert time.monotonic() - started_at < 3.0
        assert "s3cret" not in str(raised.value)
        assert "127.0.0.1" in str(raised.value)
    finally:
        await tasks.backend.close()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A port that accepts connections and never answers: a wedged Redis, or a dead link."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


async def test_silent_redis_fails_within_timeout(silent_server: str, redis_prefix: str) -> None:
    tasks = redis_tasks(silent_server, redis_prefix, "instance-a", timeout=0.3)
    try:
        started_at = time.monotonic()
        with pytest.raises(TaskBackendUnavailable):
            await tasks.claims.claim(new_claim(), TTL)
        with pytest.raises(TaskBackendUnavailable):
            await tasks.backend.ping()

        # One timeout each: no retry multiplies the time a request hangs.
        assert time.monotonic() - started_at < 1.5
    finally:
        await tasks.backend.close()


class ListenerLog(logging.Handler):
    """Counts the listeners' outage warnings and wakes the test when all have subscribed again.

    The restarted server cannot be asked whether a listener noticed the outage
    in between; the listener's own records say exactly that, in order.
    """

    def __init__(self, listeners: int) -> None:
        super().__init__(logging.INFO)
        self.outages = 0
        self.recoveries = 0
        self.all_back = asyncio.Event()
        self._listeners = listeners

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.outages += 1
        elif "subscribed again" in record.getMessage():
            self.recoveries += 1
            if self.recoveries == self._listeners:
                self.all_back.set()


@pytest.fixture
def listener_log(caplog: pytest.LogCaptureFixture) -> Iterator[ListenerLog]:
    caplog.set_level(logging.INFO, logger="app.tasks.redis.backend")
    with attached("app.tasks.redis.backend", ListenerLog(listeners=2)) as handler:
        yield handler


@pytest.mark.redis
async def test_listener_recovers_after_redis_restart(
    redis_server: RedisServer, redis_prefix: str, listener_log: ListenerLog
) -> None:
    owner = redis_tasks(redis_server.url, redis_prefix, "instance-a")
    other = redis_tasks(redis_server.url, redis_prefix, "instance-b")
    async with started(owner) as owner_runs, started(other):
        await asyncio.to_thread(redis_server.kill)
        with pytest.raises(TaskBackendUnavailable):
            await other.backend.ping()
        with pytest.raises(TaskBackendUnavailable):
            await owner.claims.claim(new_claim(), TTL)

        # An outage long enough for several reconnect attempts, so that
        # "one warning per outage, not per attempt" is actually exercised.
        await asyncio.sleep(0.4)
        await asyncio.to_thread(redis_server.start)
        async with asyncio.timeout(5.0):
            await listener_log.all_back.wait()
        assert listener_log.outages == 2

        await other.backend.ping()
        claim = new_claim()
        assert await owner.claims.claim(claim, TTL)
        run = await owner_runs.begin(claim)
        assert await other.claims.request_stop("alice", "conv-1", STOP_WAIT)
        assert await ended_by_cancel(run)
        assert owner_runs.stops == [("alice", "conv-1")]
        assert await other.claims.current("alice", "conv-1") is None


@pytest.mark.redis
async def test_a_claim_the_promoted_replica_lacks_is_taken_again_when_the_listener_reconnects(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    """Replication is asynchronous: a replica the Sentinels promote may lack a claim taken just
    before its primary died, though it has the instance's heartbeat from earlier. The server
    plays that replica: restarted from a snapshot taken after the beat, before the claim."""
    tasks = redis_tasks(redis_server.url, redis_prefix, "instance-a")
    claim = new_claim()
    async with started(tasks):
        async with redis.asyncio.Redis.from_url(redis_server.url) as server:
            await server.save()
        assert await tasks.claims.claim(claim, TTL)
        await asyncio.to_thread(redis_server.kill)
        await asyncio.to_thread(redis_server.start)

        async def taken_again() -> bool:
            with contextlib.suppress(TaskBackendUnavailable):
                return await tasks.claims.current("alice", "conv-1") == claim
            return False

        await eventually(taken_again, what="the claim taken again")


@pytest.mark.redis
async def test_after_an_outage_that_outlasts_the_deadlines_the_silent_get_time_to_beat(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    """No instance beats while Redis is away (a Sentinel failover takes 30 s by default): the
    first sweep after it must not take every other instance for dead. The server keeps the
    deadlines through the outage as a promoted replica would: restarted from a snapshot."""
    dead_after = 1.0
    judge = redis_tasks(redis_server.url, redis_prefix, "instance-a", dead_after=dead_after)
    silent = redis_tasks(redis_server.url, redis_prefix, "instance-b", dead_after=dead_after)
    async with started(judge):
        async with started(silent):
            pass  # it beat once; it may come back after the outage, or be dead
        async with redis.asyncio.Redis.from_url(redis_server.url) as server:
            await server.save()
        await asyncio.to_thread(redis_server.kill)
        with pytest.raises(TaskBackendUnavailable):
            await instances(judge).dead_instances({"instance-b"}, TTL)
        await asyncio.sleep(dead_after)  # the outage outlasts every deadline
        await asyncio.to_thread(redis_server.start)
        at_once = await instances(judge).dead_instances({"instance-b"}, TTL)

        async def judged_dead() -> bool:
            return await instances(judge).dead_instances({"instance-b"}, TTL) == ["instance-b"]

        await eventually(judged_dead, what="the silent instance judged dead")

    assert at_once == []
