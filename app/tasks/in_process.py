"""The in-process task manager: the default without Redis, and the reference for the Redis one.

Claims live in a dict of this process, so it serves exactly one instance: a
stop always finds the owner here and calls the stop handler directly. The TTL
is still honoured (checked lazily against a monotonic clock whenever a claim
is looked at), so a run that stops refreshing without releasing, say a task
wedged in a blocking call, frees its conversation just as it would on Redis.
Nothing survives a restart, which is fine: the runs did not either.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import suppress
from dataclasses import dataclass, field

from app.core.run import ConversationKey
from app.tasks.base import Claim, QueueState, StopHandler, Ticket


@dataclass(slots=True)
class _Held:
    claim: Claim
    expires_at: float
    """`time.monotonic()` deadline; a refresh moves it."""
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the claim ends (released or found expired), waking `request_stop` waiters."""


class InProcessTaskManager:
    def __init__(self) -> None:
        self._held: dict[ConversationKey, _Held] = {}
        self._on_stop: StopHandler | None = None
        self._queues: dict[ConversationKey, dict[str, float]] = {}
        """Each conversation's tickets in arrival order: task id -> `time.monotonic()` deadline."""
        self._changed: dict[ConversationKey, asyncio.Event] = {}
        self._board: dict[str, dict[str, Ticket]] = {}

    async def start(self, on_stop: StopHandler) -> None:
        if self._on_stop is not None:
            raise RuntimeError("InProcessTaskManager is already started")
        self._on_stop = on_stop

    async def close(self) -> None:
        self._on_stop = None

    async def claim(self, claim: Claim, ttl: float, ticket: Ticket | None = None) -> bool:
        key = claim.key
        if self._live(key) is not None:
            return False
        self._held[key] = _Held(claim, time.monotonic() + ttl)
        if ticket is not None:
            await self.post(ticket)
        return True

    async def refresh(self, claim: Claim, ttl: float) -> bool:
        held = self._live(claim.key)
        if held is None or held.claim.task_id != claim.task_id:
            return False
        held.expires_at = time.monotonic() + ttl
        return True

    async def release(self, claim: Claim) -> None:
        self._unlist(claim.user_id, claim.task_id)
        key = claim.key
        held = self._live(key)
        if held is not None and held.claim.task_id == claim.task_id:
            del self._held[key]
            held.released.set()
            self._changed_now(key)

    async def current(self, user_id: str, conversation_id: str) -> Claim | None:
        held = self._live(ConversationKey(user_id, conversation_id))
        return None if held is None else held.claim

    async def request_stop(self, user_id: str, conversation_id: str, wait: float) -> bool:
        if self._on_stop is None:
            raise RuntimeError("start() the task manager before stopping tasks")
        held = self._live(ConversationKey(user_id, conversation_id))
        if held is None:
            return False
        await self._on_stop(user_id, conversation_id)
        # The run releases its claim as it unwinds; returning before that
        # would let the caller's next question on this conversation get 409.
        with suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await held.released.wait()
        return True

    async def ping(self) -> None:
        """Always reachable: the registry is this process."""

    async def join_queue(self, claim: Claim, ttl: float) -> int:
        queue = self._live_queue(claim.key)
        queue[claim.task_id] = time.monotonic() + ttl
        return len(queue)

    async def keep_queued(self, claim: Claim, ttl: float) -> bool:
        queue = self._live_queue(claim.key)
        if claim.task_id not in queue:
            return False
        queue[claim.task_id] = time.monotonic() + ttl
        return True

    async def claim_queued(self, claim: Claim, ttl: float) -> QueueState:
        key = claim.key
        queue = self._live_queue(key)
        if claim.task_id not in queue:
            return "gone"
        if next(iter(queue)) != claim.task_id or not await self.claim(claim, ttl):
            return "waiting"
        del queue[claim.task_id]
        self._drop_if_empty(key)
        return "claimed"

    async def leave_queue(self, claim: Claim) -> None:
        if self._live_queue(claim.key).pop(claim.task_id, None) is not None:
            self._drop_if_empty(claim.key)
            self._changed_now(claim.key)

    async def clear_queue(self, user_id: str, conversation_id: str) -> int:
        key = ConversationKey(user_id, conversation_id)
        count = len(self._live_queue(key))
        self._queues.pop(key, None)
        self._changed_now(key)
        return count

    async def wait_released(self, user_id: str, conversation_id: str, wait: float) -> None:
        changed = self._changed.setdefault(
            ConversationKey(user_id, conversation_id), asyncio.Event()
        )
        with suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await changed.wait()

    async def post(self, ticket: Ticket) -> None:
        self._board.setdefault(ticket.user_id, {})[ticket.task_id] = ticket

    async def unpost(self, ticket: Ticket) -> None:
        self._unlist(ticket.user_id, ticket.task_id)

    def _unlist(self, user_id: str, task_id: str) -> None:
        posted = self._board.get(user_id, {})
        posted.pop(task_id, None)
        if not posted:
            self._board.pop(user_id, None)

    async def posted(self, user_id: str) -> list[Ticket]:
        posted = self._board.get(user_id, {})
        for ticket in list(posted.values()):
            key = ConversationKey(user_id, ticket.conversation_id)
            if ticket.status == "running":
                held = self._live(key)
                alive = held is not None and held.claim.task_id == ticket.task_id
            else:
                alive = ticket.task_id in self._live_queue(key)
            if not alive:
                del posted[ticket.task_id]
        return sorted(posted.values(), key=lambda t: t.started_at)

    def _live_queue(self, key: ConversationKey) -> dict[str, float]:
        """The conversation's tickets, without those whose waiters stopped keeping them."""
        queue = self._queues.setdefault(key, {})
        now = time.monotonic()
        for task_id in [t for t, deadline in queue.items() if deadline <= now]:
            del queue[task_id]
        return queue

    def _drop_if_empty(self, key: ConversationKey) -> None:
        if not self._queues.get(key):
            self._queues.pop(key, None)

    def _changed_now(self, key: ConversationKey) -> None:
        """Wake every `wait_released` on the conversation; later waits get a fresh event."""
        changed = self._changed.pop(key, None)
        if changed is not None:
            changed.set()

    def _live(self, key: ConversationKey) -> _Held | None:
        """The claim on `key` unless its TTL ran out, in which case it is dropped here."""
        held = self._held.get(key)
        if held is not None and held.expires_at <= time.monotonic():
            del self._held[key]
            held.released.set()
            self._changed_now(key)
            return None
        return held
