"""An ended run is kept for late readers (a resume, a second tab) for the retention, and no longer.

What is kept is its log, not its task: a service holds every run of the last
few minutes, and each object kept is one more that every full garbage
collection walks while all open streams wait.
"""

from __future__ import annotations

import gc
import uuid
import weakref
from collections.abc import AsyncGenerator

from app.core.events import CompleteEvent, Event, RunStatus, TextEvent
from app.core.run import Conclusion, Notice, StopSignal
from app.tasks import Claim, Claims, LocalRunLogs, in_process_tasks
from app.tasks.runs import Run, RunRegistry
from tests.support.clock import TestClock

RETENTION = 300.0


class Answer:
    """A run that is over at once: one word, then its `complete`."""

    def __init__(self, word: str) -> None:
        self.word = word

    async def events(self, stop: StopSignal) -> AsyncGenerator[Event]:
        yield TextEvent(self.word)

    async def conclude(self, stopped: RunStatus | None, notice: Notice) -> Conclusion:
        return Conclusion(CompleteEvent("completed", 1, 2))

    def movable(self) -> bool:
        return False

    async def moved(self, handed_over: bool) -> None:
        return None


async def no_stop(user_id: str, conversation_id: str) -> bool:
    return False


async def registry(clock: TestClock) -> tuple[RunRegistry, Claims]:
    tasks = in_process_tasks(clock)
    await tasks.backend.start(no_stop)
    runs = RunRegistry(
        tasks.claims, ttl=30, retention=RETENTION, shared=LocalRunLogs(), clock=clock
    )
    return runs, tasks.claims


async def ended_run(runs: RunRegistry, claims: Claims, word: str) -> Run:
    claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
    assert await claims.claim(claim, 30)
    run = runs.launch(claim, Answer(word))
    await run.ended.wait()
    return run


async def test_an_ended_run_stays_readable_without_its_task() -> None:
    runs, claims = await registry(TestClock())
    claim = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
    assert await claims.claim(claim, 30)
    run = runs.launch(claim, Answer("kept"))
    assert run.task is not None
    gone = weakref.ref(run.task)
    await run.ended.wait()
    gc.collect()

    assert gone() is None
    assert runs.find("alice", "conv-1") is run
    assert b'"kept"' in run.log.read(0)
    assert run.log.finished(run.log.last_id)
    await runs.shutdown()


async def test_ended_runs_are_forgotten_when_their_own_retention_ends() -> None:
    clock = TestClock()
    runs, claims = await registry(clock)
    first = await ended_run(runs, claims, "first")
    clock.advance(RETENTION / 2)
    second = await ended_run(runs, claims, "second")  # the same conversation's next turn

    clock.advance(RETENTION / 2)
    # The first run's expiry does not take the conversation's newer run with it.
    assert runs.find("alice", "conv-1") is second
    assert first.kept_until <= clock.monotonic() < second.kept_until

    clock.advance(RETENTION / 2)
    assert runs.find("alice", "conv-1") is None
    await runs.shutdown()
