"""The in-process task backend: the default without Redis, and the reference for the Redis one.

Claims live in a dict of this process, so it serves exactly one instance: a
stop always finds the owner here and calls the stop handler directly. The TTL
is still honoured (checked lazily against the clock whenever a claim is
looked at), so a run that stops refreshing without releasing, say a task
wedged in a blocking call, frees its conversation just as it would on Redis.
Nothing survives a restart, which is fine: the runs did not either.

The three roles share this process's state: the queue takes the claim
through `InProcessClaims`, and the list of runs asks both whether a turn it
shows still runs or waits.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import dataclass, field

from app.core.clock import SYSTEM_CLOCK, Clock
from app.core.run import ConversationKey
from app.tasks.base import Claim, QueueState, StopHandler, Tasks, Ticket


def in_process_tasks(clock: Clock = SYSTEM_CLOCK) -> Tasks:
    """The roles over one process's state; `clock` decides when a claim or ticket expired."""
    listed = _Listed()
    claims = InProcessClaims(clock, listed)
    queue = InProcessQueue(claims, clock)
    return Tasks(
        backend=claims, claims=claims, queue=queue, board=InProcessBoard(listed, claims, queue)
    )


class _Listed:
    """Each user's list of runs: user -> task id -> ticket."""

    def __init__(self) -> None:
        self.by_user: dict[str, dict[str, Ticket]] = {}

    def add(self, ticket: Ticket) -> None:
        self.by_user.setdefault(ticket.user_id, {})[ticket.task_id] = ticket

    def drop(self, user_id: str, task_id: str) -> None:
        posted = self.by_user.get(user_id, {})
        posted.pop(task_id, None)
        if not posted:
            self.by_user.pop(user_id, None)


@dataclass(slots=True)
class _Held:
    claim: Claim
    expires_at: float
    """Deadline on the clock's `monotonic()`; a refresh moves it."""
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the claim ends (released or found expired), waking `request_stop` waiters."""


class InProcessClaims:
    """The claims, and the backend's life: stops go straight to the handler given to `start`."""

    def __init__(self, clock: Clock, listed: _Listed) -> None:
        self._clock = clock
        self._listed = listed
        self._held: dict[ConversationKey, _Held] = {}
        self._on_stop: StopHandler | None = None
        self._changed: dict[ConversationKey, asyncio.Event] = {}

    async def start(self, on_stop: StopHandler) -> None:
        if self._on_stop is not None:
            raise RuntimeError("the in-process task backend is already started")
        self._on_stop = on_stop

    async def close(self) -> None:
        self._on_stop = None

    async def ping(self) -> None:
        """Always reachable: the registry is this process."""

    async def claim(self, claim: Claim, ttl: float, ticket: Ticket | None = None) -> bool:
        key = claim.key
        if self.live(key) is not None:
            return False
        self._held[key] = _Held(claim, self._clock.monotonic() + ttl)
        if ticket is not None:
            self._listed.add(ticket)
        return True

    async def refresh(self, claim: Claim, ttl: float) -> bool:
        held = self.live(claim.key)
        if held is None or held.claim.task_id != claim.task_id:
            return False
        held.expires_at = self._clock.monotonic() + ttl
        return True

    async def release(self, claim: Claim) -> None:
        self._listed.drop(claim.user_id, claim.task_id)
        key = claim.key
        held = self.live(key)
        if held is not None and held.claim.task_id == claim.task_id:
            del self._held[key]
            held.released.set()
            self.changed_now(key)

    async def current(self, user_id: str, conversation_id: str) -> Claim | None:
        held = self.live(ConversationKey(user_id, conversation_id))
        return None if held is None else held.claim

    async def request_stop(self, user_id: str, conversation_id: str, wait: float) -> bool:
        if self._on_stop is None:
            raise RuntimeError("start() the task backend before stopping tasks")
        held = self.live(ConversationKey(user_id, conversation_id))
        if held is None:
            return False
        await self._on_stop(user_id, conversation_id)
        # The run releases its claim as it unwinds; returning before that
        # would let the caller's next question on this conversation get 409.
        with suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await held.released.wait()
        return True

    def holds(self, key: ConversationKey, task_id: str) -> bool:
        held = self.live(key)
        return held is not None and held.claim.task_id == task_id

    def live(self, key: ConversationKey) -> _Held | None:
        """The claim on `key` unless its TTL ran out, in which case it is dropped here."""
        held = self._held.get(key)
        if held is not None and held.expires_at <= self._clock.monotonic():
            del self._held[key]
            held.released.set()
            self.changed_now(key)
            return None
        return held

    def changed_now(self, key: ConversationKey) -> None:
        """Wake every `wait_changed` on the conversation; later waits get a fresh event."""
        changed = self._changed.pop(key, None)
        if changed is not None:
            changed.set()

    async def wait_changed(self, key: ConversationKey, wait: float) -> None:
        changed = self._changed.setdefault(key, asyncio.Event())
        with suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await changed.wait()


class InProcessQueue:
    def __init__(self, claims: InProcessClaims, clock: Clock) -> None:
        self._claims = claims
        self._clock = clock
        self._queues: dict[ConversationKey, dict[str, float]] = {}
        """Each conversation's tickets in arrival order: task id -> deadline on the clock."""

    async def join_queue(self, claim: Claim, ttl: float) -> int:
        queue = self._live_queue(claim.key)
        queue[claim.task_id] = self._clock.monotonic() + ttl
        return len(queue)

    async def keep_queued(self, claim: Claim, ttl: float) -> bool:
        queue = self._live_queue(claim.key)
        if claim.task_id not in queue:
            return False
        queue[claim.task_id] = self._clock.monotonic() + ttl
        return True

    async def claim_queued(self, claim: Claim, ttl: float) -> QueueState:
        key = claim.key
        queue = self._live_queue(key)
        if claim.task_id not in queue:
            return "gone"
        if next(iter(queue)) != claim.task_id or not await self._claims.claim(claim, ttl):
            return "waiting"
        del queue[claim.task_id]
        self._drop_if_empty(key)
        return "claimed"

    async def leave_queue(self, claim: Claim) -> None:
        if self._live_queue(claim.key).pop(claim.task_id, None) is not None:
            self._drop_if_empty(claim.key)
            self._claims.changed_now(claim.key)

    async def clear_queue(self, user_id: str, conversation_id: str) -> int:
        key = ConversationKey(user_id, conversation_id)
        count = len(self._live_queue(key))
        self._queues.pop(key, None)
        self._claims.changed_now(key)
        return count

    async def wait_released(self, user_id: str, conversation_id: str, wait: float) -> None:
        await self._claims.wait_changed(ConversationKey(user_id, conversation_id), wait)

    def holds(self, key: ConversationKey, task_id: str) -> bool:
        return task_id in self._live_queue(key)

    def _live_queue(self, key: ConversationKey) -> dict[str, float]:
        """The conversation's tickets, without those whose waiters stopped keeping them."""
        queue = self._queues.setdefault(key, {})
        now = self._clock.monotonic()
        for task_id in [t for t, deadline in queue.items() if deadline <= now]:
            del queue[task_id]
        return queue

    def _drop_if_empty(self, key: ConversationKey) -> None:
        if not self._queues.get(key):
            self._queues.pop(key, None)


class InProcessBoard:
    def __init__(self, listed: _Listed, claims: InProcessClaims, queue: InProcessQueue) -> None:
        self._listed = listed
        self._claims = claims
        self._queue = queue

    async def post(self, ticket: Ticket) -> None:
        self._listed.add(ticket)

    async def unpost(self, ticket: Ticket) -> None:
        self._listed.drop(ticket.user_id, ticket.task_id)

    async def users(self) -> list[str]:
        return sorted(self._listed.by_user)

    async def posted(self, user_id: str) -> list[Ticket]:
        posted = self._listed.by_user.get(user_id, {})
        for ticket in list(posted.values()):
            key = ConversationKey(user_id, ticket.conversation_id)
            held_by = self._claims if ticket.status == "running" else self._queue
            if not held_by.holds(key, ticket.task_id):
                del posted[ticket.task_id]
        return sorted(posted.values(), key=lambda t: t.started_at)
