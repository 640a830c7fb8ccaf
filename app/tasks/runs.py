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

Where another instance can carry a run on (`movable`: Redis, `TURN_TAKEOVERS`),
readers see an event only once it is copied out (`RunLog.gate`), and a run
can end here without ending: handed over (`hand_over`: this instance drains)
it stops, sends what it has, and keeps its claim for the instance that takes
it over; lost (another instance took it over: this one was only slow) it stops
and writes nothing more. Neither stores the turn nor sends `complete`: the
streams reading it here end, and their clients resume where it goes on. A run
carried on here from another instance is launched like any other, its log
going on from the last event copied out (`RunLog.base`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol

from app.core.clock import SYSTEM_CLOCK, Clock
from app.core.drain import Drain
from app.core.events import CompleteEvent, Event, RunStatus
from app.core.run import Conclusion, ConversationKey, Notice, StopSignal
from app.tasks.base import Claim, ClaimLost, Claims, TaskBackendUnavailable, TaskError
from app.tasks.log import EventLogReader, RunLog, SharedRunLogs

log = logging.getLogger(__name__)

StopReason = Literal["stopped", "client_gone", "shutdown", "handover", "lost"]
STOP_STATUS: dict[StopReason, RunStatus] = {
    "stopped": "stopped",
    "client_gone": "stopped",
    "shutdown": "interrupted",
}
"""A turn cut by a stop is stored `stopped`; by its instance shutting down, `interrupted`.
One handed over, or lost to another instance, is not stored here at all."""
MOVED: frozenset[StopReason] = frozenset(("handover", "lost"))
"""Stops after which the run goes on at another instance."""
OnEnd = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Storing:
    """A run launched while its question is still being stored (app/service/turns.py)."""

    stored: asyncio.Future[bool]
    """True once the question's row is committed; False: it was not, and the run ends unseen."""
    open: Callable[[], None]
    """Starts the turn's answer meanwhile (the model call); its first event waits for `events`."""
    abandon: Callable[[], Awaitable[None]]
    """Cancels what `open` started."""


class RunProgram(Protocol):
    """An agent's turn as the runner drives it."""

    def events(self, stop: StopSignal) -> AsyncGenerator[Event]:
        """The turn's events until it ends or a stop cancels it."""
        ...

    async def conclude(self, stopped: RunStatus | None, notice: Notice) -> Conclusion:
        """Store the turn; `stopped` is its status when a stop cut it short, else None.

        `notice` shows an event on the stream meanwhile (that storing waits for the database).
        """
        ...

    def movable(self) -> bool:
        """Whether another instance could carry this turn on, were it handed over now."""
        ...

    async def moved(self, handed_over: bool) -> None:
        """The run stopped to go on at another instance, instead of `conclude`: let go of what
        it holds; `handed_over` (not lost) also saves the answer so far for the history."""
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
    """Set once the log is closed: the turn is stored and its claim released (or it moved)."""
    program: RunProgram | None = None
    """What the run drives, once launched."""
    moved: bool = False
    """It ended here to go on at another instance (handed over, or lost): it did not end."""

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done() and not self.settled

    @property
    def stop_requested(self) -> bool:
        return self.stop_reason is not None

    async def durable(self) -> None:
        await self.log.durable()

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


class UntilDrained:
    """Another instance's run as read here, until this instance's drain ends: then the stream
    ends (no `complete`), and its client resumes it on another instance."""

    def __init__(self, reader: EventLogReader, drain: Drain) -> None:
        self._reader = reader
        self._drain = drain

    async def wait(self, after: int, idle: float) -> tuple[bytes, int]:
        if self._drain.ended:
            return b"", after
        reading = asyncio.ensure_future(self._reader.wait(after, idle))
        ended = asyncio.ensure_future(self._drain.wait_ended())
        try:
            await asyncio.wait({reading, ended}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            reading.cancel()
            raise
        finally:
            ended.cancel()
        if reading.done():
            return reading.result()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        return b"", after

    def finished(self, cursor: int) -> bool:
        return self._drain.ended or self._reader.finished(cursor)


class RunRegistry:
    """`movable`: another instance can carry a run on (Redis, and `TURN_TAKEOVERS` > 0)."""

    def __init__(
        self,
        claims: Claims,
        *,
        ttl: float,
        retention: float,
        shared: SharedRunLogs,
        clock: Clock = SYSTEM_CLOCK,
        movable: bool = False,
        drain: Drain | None = None,
    ) -> None:
        self._claims = claims
        self._drain = drain or Drain()
        self._clock = clock
        self._ttl = ttl
        self._retention = retention
        self._shared = shared
        self.movable = movable
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
        # A run carried on here keeps its earlier events in the shared log only.
        if run is not None and task_id in (None, run.claim.task_id) and after >= run.log.base:
            return run.log
        if task_id is None:
            return None
        shared = await self._shared.reader(user_id, conversation_id, task_id, after)
        return None if shared is None else UntilDrained(shared, self._drain)

    async def last_event_id(self, user_id: str, conversation_id: str, task_id: str) -> int | None:
        """The newest event id of that run its readers may see, from this instance's log or
        the shared one."""
        run = self.find(user_id, conversation_id)
        if run is not None and run.claim.task_id == task_id:
            return run.log.shown_id
        return await self._shared.last_event_id(user_id, task_id)

    def launch(
        self,
        claim: Claim,
        program: RunProgram,
        on_end: OnEnd | None = None,
        run: Run | None = None,
        storing: Storing | None = None,
    ) -> Run:
        """Start the run in the background; the caller already holds `claim`.

        `on_end` runs once the turn is stored, before the claim is released,
        so whoever waits for the release (a stop) sees what it frees too.
        `run` is one whose stream already opened (a queued turn): its log goes on.
        `storing`: the question is still being written; the run opens the turn's answer
        meanwhile, and does nothing else (no event, no copy, no heartbeat) until it is
        stored. Not stored, the run ends there: no `complete`, no `on_end`, its claim
        the caller's to release.
        """
        run = run or Run(claim)
        if self.movable:
            run.log.gate()
        run.program = program
        self._runs[claim.key] = run
        run.task = asyncio.create_task(
            self._drive(run, program, on_end, storing), name=f"run-{claim.task_id}"
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

    def lost(self, claim: Claim) -> None:
        """Another instance took this run over (this one was only slow): stop it, write nothing."""
        run = self._runs.get(claim.key)
        if run is not None and run.claim.task_id == claim.task_id and run.stop("lost"):
            log.warning(
                "run %s of %s was taken over by another instance: stopping it here",
                claim.task_id,
                claim.conversation_id,
            )

    def running(self) -> list[Run]:
        """The local runs whose events still come (not queued, not storing their outcome)."""
        return [run for run in self._runs.values() if run.running]

    async def settle(self, within: float) -> None:
        """Wait up to `within` seconds for the local runs to end (a drain's grace)."""
        waits = [asyncio.ensure_future(run.ended.wait()) for run in self.running()]
        if not waits:
            return
        try:
            await asyncio.wait(waits, timeout=within)
        finally:
            for wait in waits:
                wait.cancel()

    async def hand_over(self) -> int:
        """Stop every local run another instance can carry on, and send what it has.

        They keep their claims, for the instance that takes them over; how many there were.
        """
        moving = [
            run
            for run in self.running()
            if self.movable and run.program is not None and run.program.movable()
        ]
        for run in moving:
            run.stop("handover")
        await self._ended(moving)
        return len(moving)

    async def shutdown(self) -> None:
        """Hand over the runs another instance can carry on; stop the others (stored
        `interrupted`); wait for all of them to end.

        A run past the point a stop could change is still storing its outcome,
        so it is waited for too: nothing of a run may outlive the app's
        database and clients. The logs kept for late readers go with the app.
        """
        await self.hand_over()
        for run in self._runs.values():
            run.stop("shutdown")
        await self._ended(list(self._runs.values()))
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        self._kept.clear()
        self._runs.clear()

    @staticmethod
    async def _ended(runs: list[Run]) -> None:
        pending = [r.task for r in runs if r.task is not None and not r.task.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    async def _drive(
        self, run: Run, program: RunProgram, on_end: OnEnd | None, storing: Storing | None
    ) -> None:
        if storing is not None and not await self._stored(run, storing):
            return
        heartbeat = asyncio.create_task(self._heartbeat(run.claim))
        copier = asyncio.create_task(self._shared.publish(run.claim, run.log))
        copier.add_done_callback(lambda done: self._copy_ended(run, done))
        conclusion: Conclusion | None = None
        try:
            stopped = await self._events(run, program)
            if run.stop_reason not in MOVED:
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
            if run.stop_reason in MOVED:
                await self._moved(run, program, copier)
            if on_end is not None:
                try:
                    await on_end()
                except Exception:
                    log.exception("run %s: its end hook failed", run.claim.task_id)
            if run.moved:
                run.ended.set()
            else:
                run.complete = conclusion.complete if conclusion is not None else None
                run.log.end(run.complete)
                if not await self._copied(run, copier):
                    await self._release(run.claim)
                run.log.close()
                run.ended.set()
                self._keep(run)

    async def _stored(self, run: Run, storing: Storing) -> bool:
        """Open the turn's answer and wait for its question's row; False: it was not stored,
        and the run has ended unseen.

        A stop meanwhile waits for the row too, then lands in the run's events as it
        would have right after launch (the turn is stored `stopped`).
        """
        storing.open()
        try:
            stored = await asyncio.shield(storing.stored)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            stored = await storing.stored
            if stored:
                asyncio.get_running_loop().call_soon(run._cancel)
        if stored:
            return True
        await storing.abandon()
        run.settled = True
        run.task = None
        if self._runs.get(run.claim.key) is run:
            del self._runs[run.claim.key]
        run.log.close()
        run.ended.set()
        return False

    async def _moved(self, run: Run, program: RunProgram, copier: asyncio.Task[bool]) -> None:
        """End here a run that goes on at another instance: no store, no `complete`, the claim
        kept for the instance that takes it over. Handed over, the log is copied out to its
        last event first; lost, nothing more is written and what was not copied is not shown."""
        handed_over = run.stop_reason == "handover"
        try:
            await program.moved(handed_over)
        except Exception:
            log.exception("run %s: letting go of it failed", run.claim.task_id)
        if handed_over:
            run.log.hand_over()
        else:
            copier.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await copier
        run.log.close(show_rest=handed_over)
        run.moved = True
        run.task = None
        if self._runs.get(run.claim.key) is run:
            del self._runs[run.claim.key]

    def _copy_ended(self, run: Run, copier: asyncio.Task[bool]) -> None:
        """A copy refused because another instance holds the claim now: the run stops here."""
        if not copier.cancelled() and isinstance(copier.exception(), ClaimLost):
            self.lost(run.claim)

    async def _events(self, run: Run, program: RunProgram) -> RunStatus | None:
        """Append the run's events until it ends; the status to store if a stop cut it.

        A stop cancels the run, which lands at its next wait; one that came before the
        run's first event (kept while its question was stored) may find none left, the
        answer all there already, so it also lands after the event it follows.
        """
        events = program.events(run)
        try:
            async for event in events:
                run.log.append(event)
                if run.stop_reason is not None:
                    await events.aclose()
                    return STOP_STATUS.get(run.stop_reason, "stopped")
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return STOP_STATUS.get(run.stop_reason or "stopped", "stopped")
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
