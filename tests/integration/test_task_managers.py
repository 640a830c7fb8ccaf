"""One contract for both task managers, then what only Redis can do: several instances, outages.

The contract runs against `InProcessTaskManager` and `RedisTaskManager` alike,
so the in-process reference and Redis cannot drift apart. The Redis-only
tests use two managers on one Redis as two instances of the service, and one
test owns a private `redis-server` it kills and restarts. Only an instance's
death is polled for (it is noticed on Redis's clock); one sleep waits out a
TTL, one makes an outage last, one shows a slow heartbeat is not a death,
all of them durations by nature. Where a test shows that a call returned on an
event rather than on a timeout, the timeout is long and the bound is half of
it: a loaded two-core CI still passes, and how fast it is lives in bench/.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from app.config import Settings
from app.tasks import (
    Claim,
    InProcessTaskManager,
    RedisTaskManager,
    TaskBackendUnavailable,
    TaskManager,
    build_task_manager,
)
from tests.support.logs import attached
from tests.support.polling import eventually
from tests.support.processes import RedisServer, free_port

TTL = 30.0
SHORT_TTL = 0.3
STOP_WAIT = 30.0
PROMPTLY = STOP_WAIT / 2
"""Far below a wait that ran out, far above any scheduling delay."""


def new_claim(user_id: str = "alice", conversation_id: str = "conv-1") -> Claim:
    return Claim(user_id, conversation_id, task_id=uuid.uuid4().hex, agent_type="chat")


class Runs:
    """The owning instance's side: one run per claim, releasing it as it unwinds, like the API's."""

    def __init__(self, manager: TaskManager) -> None:
        self.manager = manager
        self.tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
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
                await self.manager.release(claim)

        task = asyncio.create_task(run())
        self.tasks[(claim.user_id, claim.conversation_id)] = task
        await inside.wait()
        return task

    async def on_stop(self, user_id: str, conversation_id: str) -> bool:
        self.stops.append((user_id, conversation_id))
        task = self.tasks.pop((user_id, conversation_id), None)
        if task is None:
            return False
        task.cancel()
        return True

    async def cancel_all(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)


async def ended_by_cancel(run: asyncio.Task[None]) -> bool:
    """Whether the run was cancelled; it may still be finishing the release the stop waited for."""
    await asyncio.wait([run], timeout=PROMPTLY)
    return run.cancelled()


@asynccontextmanager
async def started(manager: TaskManager) -> AsyncIterator[Runs]:
    runs = Runs(manager)
    await manager.start(runs.on_stop)
    try:
        yield runs
    finally:
        await runs.cancel_all()
        await manager.close()


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[tuple[TaskManager, Runs]]:
    if request.param == "memory":
        async with started(InProcessTaskManager()) as runs:
            yield runs.manager, runs
        return
    url: str = request.getfixturevalue("redis_url")
    prefix: str = request.getfixturevalue("redis_prefix")
    async with started(RedisTaskManager(url, prefix, "instance-a")) as runs:
        yield runs.manager, runs


# The contract, for both backends.


async def test_claim_refused_while_held(backend: tuple[TaskManager, Runs]) -> None:
    manager, _ = backend
    first, second = new_claim(), new_claim()

    assert await manager.claim(first, TTL)
    assert not await manager.claim(second, TTL)
    assert await manager.current("alice", "conv-1") == first
    assert await manager.claim(new_claim(conversation_id="conv-2"), TTL)
    assert await manager.claim(new_claim(user_id="bob"), TTL)


async def test_current_is_none_for_unknown_conversation(backend: tuple[TaskManager, Runs]) -> None:
    manager, _ = backend

    assert await manager.current("alice", "never-claimed") is None


async def test_release_only_by_owner(backend: tuple[TaskManager, Runs]) -> None:
    manager, _ = backend
    owner, other = new_claim(), new_claim()
    assert await manager.claim(owner, TTL)

    await manager.release(other)
    assert await manager.current("alice", "conv-1") == owner
    assert not await manager.refresh(other, TTL)

    await manager.release(owner)
    assert await manager.current("alice", "conv-1") is None
    assert await manager.claim(other, TTL)


async def test_claim_expires_without_refresh(backend: tuple[TaskManager, Runs]) -> None:
    manager, _ = backend
    lapsing, kept = new_claim(), new_claim(conversation_id="conv-2")
    # Both live long until the refresh sets the short TTL: a pause before it cannot lose them.
    assert await manager.claim(lapsing, TTL)
    assert await manager.claim(kept, TTL)
    assert await manager.refresh(lapsing, SHORT_TTL)

    await asyncio.sleep(SHORT_TTL + 0.15)

    assert await manager.current("alice", "conv-1") is None
    assert await manager.current("alice", "conv-2") == kept
    retaken = new_claim()
    assert await manager.claim(retaken, TTL)
    assert not await manager.refresh(lapsing, TTL)
    await manager.release(lapsing)
    assert await manager.current("alice", "conv-1") == retaken


async def test_request_stop_returns_once_run_released(backend: tuple[TaskManager, Runs]) -> None:
    manager, runs = backend
    claim = new_claim()
    assert await manager.claim(claim, TTL)
    run = await runs.begin(claim)

    started_at = time.monotonic()
    assert await manager.request_stop("alice", "conv-1", STOP_WAIT)

    assert time.monotonic() - started_at < PROMPTLY
    assert runs.stops == [("alice", "conv-1")]
    assert await ended_by_cancel(run)
    assert await manager.current("alice", "conv-1") is None
    assert await manager.claim(new_claim(), TTL)


async def test_request_stop_on_nothing_returns_false(backend: tuple[TaskManager, Runs]) -> None:
    manager, runs = backend
    claim = new_claim()
    assert await manager.claim(claim, TTL)
    await runs.begin(claim)
    assert await manager.request_stop("alice", "conv-1", STOP_WAIT)

    started_at = time.monotonic()
    assert not await manager.request_stop("alice", "conv-1", STOP_WAIT)
    assert not await manager.request_stop("alice", "unknown", STOP_WAIT)

    assert time.monotonic() - started_at < PROMPTLY
    assert runs.stops == [("alice", "conv-1")]


async def test_request_stop_waits_at_most_wait(backend: tuple[TaskManager, Runs]) -> None:
    manager, runs = backend
    # Claimed, but no run here answers the stop (its instance died): only the TTL frees it.
    assert await manager.claim(new_claim(), TTL)

    started_at = time.monotonic()
    assert await manager.request_stop("alice", "conv-1", 0.2)

    # Returned after its wait, not when the claim's TTL finally ran out.
    assert 0.15 < time.monotonic() - started_at < TTL / 2
    assert runs.stops == [("alice", "conv-1")]


async def test_users_are_isolated(backend: tuple[TaskManager, Runs]) -> None:
    manager, runs = backend
    alices = new_claim(user_id="alice")
    assert await manager.claim(alices, TTL)
    run = await runs.begin(alices)

    assert not await manager.request_stop("bob", "conv-1", STOP_WAIT)
    assert await manager.current("bob", "conv-1") is None

    assert runs.stops == []
    assert not run.done()
    assert await manager.current("alice", "conv-1") == alices


# Choosing the backend.


async def test_factory_uses_redis_only_when_configured(redis_prefix: str) -> None:
    assert isinstance(build_task_manager(Settings(redis_url=""), "a"), InProcessTaskManager)

    # Building connects to nothing: an address that cannot resolve proves it.
    settings = Settings(redis_url="redis://redis.invalid:6379/0", redis_prefix=redis_prefix)
    manager = build_task_manager(settings, "a")
    assert isinstance(manager, RedisTaskManager)
    await manager.close()


# Redis only: several instances, and Redis going away.


@pytest.mark.redis
async def test_a_live_instance_is_never_judged_dead_whatever_the_judges_settings(
    redis_url: str, redis_prefix: str
) -> None:
    quick = RedisTaskManager(redis_url, redis_prefix, "instance-quick", dead_after=0.3)
    slow = RedisTaskManager(redis_url, redis_prefix, "instance-slow", dead_after=3.0)
    async with started(quick), started(slow):
        claim = new_claim()
        assert await slow.claim(claim, TTL)
        # Five of the quick one's lifetimes; the slow one beats every 0.6 s.
        await asyncio.sleep(1.5)
        judged = await quick.dead_instances({"instance-slow"}, TTL)
        taken = await quick.claim(new_claim(), TTL)
        current = await quick.current("alice", "conv-1")

    assert judged == []
    assert not taken
    assert current == claim


@pytest.mark.redis
async def test_a_dead_instances_claims_are_free_once_its_own_deadline_passed(
    redis_url: str, redis_prefix: str
) -> None:
    judge = RedisTaskManager(redis_url, redis_prefix, "instance-a", dead_after=30.0)
    dying = RedisTaskManager(redis_url, redis_prefix, "instance-b", dead_after=0.5)
    async with started(judge):
        async with started(dying):
            assert await dying.claim(new_claim(), TTL)
        # Closed without releasing, as a killed instance: it beats no more.
        refused_at_once = not await judge.claim(new_claim(), TTL)

        async def judged_dead() -> bool:
            return await judge.dead_instances(set(), TTL) == ["instance-b"]

        dead_after = await eventually(judged_dead)
        asked = time.monotonic()
        stopped = await judge.request_stop("alice", "conv-1", STOP_WAIT)
        stop_answered_after = time.monotonic() - asked
        taken = await judge.claim(new_claim(), TTL)

    assert refused_at_once
    assert dead_after < 0.5 + 1.0
    assert not stopped
    assert stop_answered_after < PROMPTLY
    assert taken


@pytest.mark.redis
async def test_stop_reaches_the_owning_instance(redis_url: str, redis_prefix: str) -> None:
    owner = RedisTaskManager(redis_url, redis_prefix, "instance-a")
    other = RedisTaskManager(redis_url, redis_prefix, "instance-b")
    async with started(owner) as owner_runs, started(other):
        claim = new_claim()
        assert await owner.claim(claim, TTL)
        run = await owner_runs.begin(claim)

        started_at = time.monotonic()
        assert await other.request_stop("alice", "conv-1", STOP_WAIT)

        assert time.monotonic() - started_at < PROMPTLY
        assert await ended_by_cancel(run)
        assert owner_runs.stops == [("alice", "conv-1")]
        assert await other.current("alice", "conv-1") is None


async def test_unreachable_redis_fails_fast(redis_prefix: str) -> None:
    url = f"redis://:s3cret-password@127.0.0.1:{free_port()}/0"
    manager = RedisTaskManager(url, redis_prefix, "instance-a")
    try:
        started_at = time.monotonic()
        await manager.start(Runs(manager).on_stop)
        with pytest.raises(TaskBackendUnavailable) as raised:
            await manager.claim(new_claim(), TTL)
        with pytest.raises(TaskBackendUnavailable):
            await manager.ping()
        with pytest.raises(TaskBackendUnavailable):
            await manager.request_stop("alice", "conv-1", STOP_WAIT)

        assert time.monotonic() - started_at < 3.0
        assert "s3cret" not in str(raised.value)
        assert "127.0.0.1" in str(raised.value)
    finally:
        await manager.close()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A port that accepts connections and never answers: a wedged Redis, or a dead link."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


async def test_silent_redis_fails_within_timeout(silent_server: str, redis_prefix: str) -> None:
    manager = RedisTaskManager(silent_server, redis_prefix, "instance-a", timeout=0.3)
    try:
        started_at = time.monotonic()
        with pytest.raises(TaskBackendUnavailable):
            await manager.claim(new_claim(), TTL)
        with pytest.raises(TaskBackendUnavailable):
            await manager.ping()

        # One timeout each: no retry multiplies the time a request hangs.
        assert time.monotonic() - started_at < 1.5
    finally:
        await manager.close()


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
    caplog.set_level(logging.INFO, logger="app.tasks.redis")
    with attached("app.tasks.redis", ListenerLog(listeners=2)) as handler:
        yield handler


@pytest.mark.redis
async def test_listener_recovers_after_redis_restart(
    redis_server: RedisServer, redis_prefix: str, listener_log: ListenerLog
) -> None:
    owner = RedisTaskManager(redis_server.url, redis_prefix, "instance-a")
    other = RedisTaskManager(redis_server.url, redis_prefix, "instance-b")
    async with started(owner) as owner_runs, started(other):
        await asyncio.to_thread(redis_server.kill)
        with pytest.raises(TaskBackendUnavailable):
            await other.ping()
        with pytest.raises(TaskBackendUnavailable):
            await owner.claim(new_claim(), TTL)

        # An outage long enough for several reconnect attempts, so that
        # "one warning per outage, not per attempt" is actually exercised.
        await asyncio.sleep(0.4)
        await asyncio.to_thread(redis_server.start)
        async with asyncio.timeout(5.0):
            await listener_log.all_back.wait()
        assert listener_log.outages == 2

        await other.ping()
        claim = new_claim()
        assert await owner.claim(claim, TTL)
        run = await owner_runs.begin(claim)
        assert await other.request_stop("alice", "conv-1", STOP_WAIT)
        assert await ended_by_cancel(run)
        assert owner_runs.stops == [("alice", "conv-1")]
        assert await other.current("alice", "conv-1") is None
