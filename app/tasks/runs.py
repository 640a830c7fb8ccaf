"""The runs this instance owns: background tasks decoupled from the HTTP response.

A run is an asyncio task that drains an agent's event stream into a
`RunLog`. Responses only read that log, so a client that goes away does not
lose the answer, and a second client can resume. While the run lives its
claim is refreshed; when it ends the claim is released and the log is kept
for `retention` seconds for late readers.

Stopping cancels the task. The agent's generator catches the cancellation,
stores the partial answer and emits `complete`, so a stop is an orderly end
and not a lost turn; the reason given here decides the stored status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal

from app.core.events import Event
from app.tasks.base import Claim, TaskError, TaskManager
from app.tasks.log import RunLog

log = logging.getLogger(__name__)

StopReason = Literal["stopped", "client_gone", "shutdown"]


@dataclass(slots=True)
class Run:
    claim: Claim
    log: RunLog = field(default_factory=RunLog)
    stop_reason: StopReason | None = None
    task: asyncio.Task[None] | None = None
    settled: bool = False
    """The agent has finished; only the claim release is left, which must not be cancelled."""

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done() and not self.settled

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


EventSource = Callable[[Run], AsyncIterator[Event]]


class RunRegistry:
    def __init__(self, tasks: TaskManager, ttl: float, retention: float) -> None:
        self._tasks = tasks
        self._ttl = ttl
        self._retention = retention
        self._runs: dict[tuple[str, str], Run] = {}

    def find(self, user_id: str, conversation_id: str) -> Run | None:
        return self._runs.get((user_id, conversation_id))

    def launch(self, claim: Claim, source: EventSource) -> Run:
        """Start the run in the background; the caller already holds `claim`."""
        run = Run(claim)
        self._runs[(claim.user_id, claim.conversation_id)] = run
        run.task = asyncio.create_task(self._drive(run, source), name=f"run-{claim.task_id}")
        return run

    async def stop(
        self, user_id: str, conversation_id: str, reason: StopReason = "stopped"
    ) -> bool:
        """Stop a local run and wait until it has stored its turn and released its claim."""
        run = self.find(user_id, conversation_id)
        if run is None or run.task is None or not run.stop(reason):
            return False
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(run.task)
        return True

    async def shutdown(self) -> None:
        """Stop every local run (stored as interrupted) and wait for them to finish storing."""
        pending = [r.task for r in self._runs.values() if r.task and r.stop("shutdown")]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    async def _drive(self, run: Run, source: EventSource) -> None:
        heartbeat = asyncio.create_task(self._heartbeat(run.claim))
        try:
            async for event in source(run):
                run.log.append(event)
        except Exception:
            log.exception("run %s ended with an unhandled error", run.claim.task_id)
        finally:
            run.settled = True
            run.log.close()
            heartbeat.cancel()
            await self._release(run.claim)
            asyncio.get_running_loop().call_later(self._retention, self._forget, run)

    async def _heartbeat(self, claim: Claim) -> None:
        interval = max(self._ttl / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                if not await self._tasks.refresh(claim, self._ttl):
                    log.warning("run %s lost its claim on %s", claim.task_id, claim.conversation_id)
            except TaskError as exc:
                log.warning("could not refresh the claim of run %s: %s", claim.task_id, exc)

    async def _release(self, claim: Claim) -> None:
        try:
            await self._tasks.release(claim)
        except TaskError as exc:
            log.warning("could not release run %s (it expires by TTL): %s", claim.task_id, exc)

    def _forget(self, run: Run) -> None:
        key = (run.claim.user_id, run.claim.conversation_id)
        if self._runs.get(key) is run:
            del self._runs[key]
