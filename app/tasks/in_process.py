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
from app.tasks.base import Claim, StopHandler


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

    async def start(self, on_stop: StopHandler) -> None:
        if self._on_stop is not None:
            raise RuntimeError("InProcessTaskManager is already started")
        self._on_stop = on_stop

    async def close(self) -> None:
        self._on_stop = None

    async def claim(self, claim: Claim, ttl: float) -> bool:
        key = claim.key
        if self._live(key) is not None:
            return False
        self._held[key] = _Held(claim, time.monotonic() + ttl)
        return True

    async def refresh(self, claim: Claim, ttl: float) -> bool:
        held = self._live(claim.key)
        if held is None or held.claim.task_id != claim.task_id:
            return False
        held.expires_at = time.monotonic() + ttl
        return True

    async def release(self, claim: Claim) -> None:
        key = claim.key
        held = self._live(key)
        if held is not None and held.claim.task_id == claim.task_id:
            del self._held[key]
            held.released.set()

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

    def _live(self, key: ConversationKey) -> _Held | None:
        """The claim on `key` unless its TTL ran out, in which case it is dropped here."""
        held = self._held.get(key)
        if held is not None and held.expires_at <= time.monotonic():
            del self._held[key]
            held.released.set()
            return None
        return held
