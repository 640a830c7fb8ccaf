"""The runs this instance owns: background tasks decoupled from the HTTP response.

A run is an asyncio task that drains an agent's event stream into a
`RunLog`. Responses only read that log, so a client that goes away does not
lose the answer, and a second client can resume. While the run lives its
claim is refreshed (and taken again if Redis lost it in a restart); when it
ends the claim is released and the log is kept for `retention` seconds for
late readers. With `SharedRunLogs` (Redis) the log is also copied out, beside
the run, so other instances can resume it.

A run is driven in two phases (`RunProgram`): its events, which a stop
cancels, then its conclusion, which nothing cancels: the agent stores the
turn (the partial answer, when stopped) and hands back `complete`. The
runner alone marks the run settled between the two, and decides the
status a stop is stored with from the reason given here.

The final `complete` is held back until the claim is released and the
log is copied to the shared logs: a client that acts the moment it reads
`complete` (its next question, a resume elsewhere) must find the
conversation free and the whole run there, on any instance.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol

from app.core.clock import SYSTEM_CLOCK, Clock
from app.core.events import CompleteEvent, Event, RunStatus
from app.core.run import Conclusion, ConversationKey, Notice, StopSignal
from app.tasks.base import Claim, Claims, TaskBackendUnavailable, TaskError
from app.tasks.log import EventLogReader, RunLog, SharedRunLogs

log = logging.getLogger(__name__)

StopReason = Literal["stopped", "client_gone", "shutdown"]
STOP_STATUS: dict[StopReason, RunStatus] = {
    "stopped": "stopped",
    "client_gone": "stopped",
    "shutdown": "interrupted",
}
"""A turn cut by a stop is stored `stopped`; by its instance shutting down, `interrupted`."""
OnEnd = Callable[[], Awaitable[None]]


class RunProgram(Protocol):
    """An agent's turn as the runner drives it."""

    def events(self, stop: StopSignal) -> AsyncIterator[Event]:
        """The turn's events until it ends or a stop cancels it."""
        ...

    async def conclude(self, stopped: RunStatus | None, notice: Notice) -> Conclusion:
        """Store the turn; `stopped` is its status when a stop cut it short, else None.

        `notice` shows an event on the stream meanwhile (that storing waits for the database).
        """
        ...


@dataclass(slots=True)
class Run:
    claim: Claim
    log: RunLog = field(default_factory=RunLog)
    stop_reason: StopReason | None = None
    task: asyncio.Task[None] | None = None
    settled: bool = False
    """Past the point a stop could change: the agent is storing its outcome, or has finished."""
    kept_until: float = 0.0
    """When the ended run's log stops being kept for late readers (the registry's clock)."""
    row_id: int | None = None
    """The turn's row, once its question is stored (a queued run has none yet)."""
    complete: CompleteEvent | None = None
    """How the turn ended, once it has (for whoever is told of its end: a webhook)."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the log is closed: the turn is stored and its claim released."""

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done() and not self.settled

    @property
    def stop_requested(self) -> bool:
        return self.stop_reason is not None

    def stop(self, reason: StopReason) -> bool:
        """Cancel the run once; the first reason given is the one stored.

        The cancel is scheduled rather than immediate so that it always lands
        inside the agent's generator, never before the task's first step.
        """
        if not self.running or self.task is None:
            return False
        if self.stop_reason is None:
            self.stop_reason = reason
            asyncio.get_running_loop().call_soon(self._cancel)
        return True

    def _cancel(self) -> None:
        if self.task is not None and not self.settled:
            self.task.cancel()


class RunRegistry:
    def __init__(
        self,
        claims: Claims,
        ttl: float,
        retention: float,
        shared: SharedRunLogs,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._claims = claims
        self._clock = clock
        self._ttl = ttl
        self._retention = retention
        self._shared = shared
        self._runs: dict[ConversationKey, Run] = {}
        self._starting: dict[ConversationKey, StopReason | None] = {}
        """Turns claimed and not yet launched, with the stop that came meanwhile, if any."""
        self._kept: deque[Run] = deque()
        """Ended runs in the order they ended, which is the order they expire in."""
        self._expiry: asyncio.TimerHandle | None = None

    def find(self, user_id: str, conversation_id: str) -> Run | None:
        if self._kept and self._kept[0].kept_until <= self._clock.monotonic():
            self._expire()
        return self._runs.get(ConversationKey(user_id, conversation_id))

    async def reader(self, user_id: str, conversation_id: str, after: int) -> EventLogReader | None:
        """The log of the conversation's running or recent run, wherever it runs; None if none.

        A local run is read from memory, unless the shared logs know of a newer
        run on another instance. Raises `TaskBackendUnavailable` when the
        shared logs cannot be asked and there is no local run, and `EventsGone`
        when the events after `after` are no longer kept.
        """
        run = self.find(user_id, conversation_id)
        try:
            task_id = await self._shared.latest(user_id, conversation_id)
        except TaskBackendUnavailable:
            if run is None:
                raise
            return run.log
        if run is not None and task_id in (None, run.claim.task_id):
            return run.log
        if task_id is None:
            return None
        return await self._shared.reader(user_id, conversation_id, task_id, after)

    async def last_event_id(self, user_id: str, conversation_id: str, task_id: str) -> int | None:
        """The newest event id of that run, from this instance's log or the shared one."""
        run = self.find(user_id, conversation_id)
        if run is not None and run.claim.task_id == task_id:
            return run.log.last_id
        return await self._shared.last_event_id(task_id)

    def launch(
        self,
        claim: Claim,
        program: RunProgram,
        on_end: OnEnd | None = None,
        run: Run | None = None,
    ) -> Run:
        """Start the run in the background; the caller already holds `claim`.

        `on_end` runs once the turn is stored, before the claim is released,
        so whoever waits for the release (a stop) sees what it frees too.
        `run` is one whose stream already opened (a queued turn): its log goes on.
        """
        run = run or Run(claim)
        self._runs[claim.key] = run
        run.task = asyncio.create_task(
            self._drive(run, program, on_end), name=f"run-{claim.task_id}"
        )
        early = self._starting.get(claim.key)
        if early is not None:
            run.stop(early)
        return run

    @contextlib.contextmanager
    def starting(self, key: ConversationKey) -> Iterator[None]:
        """A turn of `key` holds its claim and is about to launch (storing its question,
        or waiting its turn to): a stop meanwhile is kept, and stops the run at launch."""
        self._starting[key] = None
        try:
            yield
        finally:
            self._starting.pop(key, None)

    async def stop(
        self, user_id: str, conversation_id: str, reason: StopReason = "stopped"
    ) -> bool:
        """Stop a local run and wait until it has stored its turn and released its claim.

        A turn still starting is stopped as it launches; its claim's release
        tells the caller when it has ended.
        """
        key = ConversationKey(user_id, conversation_id)
        run = self._runs.get(key)
        if key in self._starting and (run is None or not run.running):
            self._starting[key] = self._starting[key] or reason
            return True
        if run is None or run.task is None or not run.stop(reason):
            return False
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(run.task)
        return True

    async def shutdown(self) -> None:
        """Stop every local run (stored as interrupted) and wait for all of them to end.

        A run past the point a stop could change is still storing its outcome,
        so it is waited for too: nothing of a run may outlive the app's
        database and clients. The logs kept for late readers go with the app.
        """
        for run in self._runs.values():
            run.stop("shutdown")
        pending = [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        self._kept.clear()
        self._runs.clear()

    async def _drive(self, run: Run, program: RunProgram, on_end: OnEnd | None) -> None:
        heartbeat = asyncio.create_task(self._heartbeat(run.claim))
        copier = asyncio.create_task(self._shared.publish(run.claim, run.log))
        conclusion: Conclusion | None = None
        try:
            stopped = await self._events(run, program)
            conclusion = await program.conclude(stopped, run.log.append)
            for event in conclusion.events:
                run.log.append(event)
        except Exception:
            log.exception("run %s ended with an unhandled error", run.claim.task_id)
        finally:
            run.settled = True
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            if on_end is not None:
                try:
                    await on_end()
                except Exception:
                    log.exception("run %s: its end hook failed", run.claim.task_id)
            run.complete = conclusion.complete if conclusion is not None else None
            run.log.end(run.complete)
            if not await self._copied(run, copier):
                await self._release(run.claim)
            run.log.close()
            run.ended.set()
            self._keep(run)

    async def _events(self, run: Run, program: RunProgram) -> RunStatus | None:
        """Append the run's events until it ends; the status to store if a stop cut it."""
        try:
            async for event in program.events(run):
                run.log.append(event)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return STOP_STATUS[run.stop_reason or "stopped"]
        finally:
            # From here on a stop changes nothing: what is left is storing and `complete`.
            run.settled = True
        return None

    async def _copied(self, run: Run, copier: asyncio.Task[bool]) -> bool:
        """Wait for the copy to finish (it gives up on its own when Redis is down).

        True when its last round trip released the claim too.
        """
        try:
            return await copier
        except Exception:
            log.exception("copying run %s to the shared log failed", run.claim.task_id)
            return False

    async def _heartbeat(self, claim: Claim) -> None:
        interval = max(self._ttl / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                if await self._claims.refresh(claim, self._ttl):
                    continue
                # Gone rather than taken, when Redis restarted empty: take it again.
                if await self._claims.claim(claim, self._ttl):
                    log.info("run %s claimed %s again", claim.task_id, claim.conversation_id)
                else:
                    log.warning("run %s lost its claim on %s", claim.task_id, claim.conversation_id)
            except TaskError as exc:
                log.warning("could not refresh the claim of run %s: %s", claim.task_id, exc)

    async def _release(self, claim: Claim) -> None:
        try:
            await self._claims.release(claim)
        except TaskError as exc:
            log.warning("could not release run %s (it expires by TTL): %s", claim.task_id, exc)

    def _keep(self, run: Run) -> None:
        """Keep the ended run's log for late readers, and nothing it no longer needs.

        Its task goes, with what asyncio and anyio keep beside a task: kept
        for the whole retention, those made every kept run twenty-odd objects
        that each full garbage collection walks, and with a few thousand runs
        kept the collections paused every open stream for 100 to 200 ms. One
        timer expires all kept runs, rather than one each; `find` expires them
        too, so what a reader sees follows the clock, not the timer's lateness.
        """
        run.task = None
        run.kept_until = self._clock.monotonic() + self._retention
        self._kept.append(run)
        if self._expiry is None:
            self._expiry = asyncio.get_running_loop().call_later(self._retention, self._expire)

    def _expire(self) -> None:
        now = self._clock.monotonic()
        while self._kept and self._kept[0].kept_until <= now:
            run = self._kept.popleft()
            if self._runs.get(run.claim.key) is run:
                del self._runs[run.claim.key]
        if self._expiry is not None:
            self._expiry.cancel()
        self._expiry = None
        if self._kept:
            delay = self._kept[0].kept_until - now
            self._expiry = asyncio.get_running_loop().call_later(delay, self._expire)
