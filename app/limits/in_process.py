"""Per-user limits in this process's memory: exact for one instance, per instance for several."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from app.limits.base import (
    UNHELD,
    Action,
    Rates,
    StreamSlot,
    refill,
    too_fast,
    too_many_streams,
)


@dataclass(slots=True)
class _Slot:
    streams: dict[str, set[str]]
    user: str
    run_id: str

    async def release(self) -> None:
        held = self.streams.get(self.user)
        if held is not None:
            held.discard(self.run_id)
            if not held:
                del self.streams[self.user]


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float = field(default_factory=time.monotonic)


class InProcessUserLimits:
    def __init__(self, rates: Rates) -> None:
        self._rates = rates
        self._streams: dict[str, set[str]] = {}
        self._buckets: dict[tuple[str, Action], _Bucket] = {}

    async def open_stream(self, user: str, run_id: str, rates: Rates | None = None) -> StreamSlot:
        rates = rates or self._rates
        if not rates.max_streams:
            await self.take(user, "stream", rates)
            return UNHELD
        held = self._streams.setdefault(user, set())
        if len(held) >= rates.max_streams:
            raise too_many_streams(rates)
        await self.take(user, "stream", rates)
        held.add(run_id)
        return _Slot(self._streams, user, run_id)

    async def take(self, user: str, action: Action, rates: Rates | None = None) -> None:
        per_minute = (rates or self._rates).bucket(action)
        if not per_minute:
            return
        now = time.monotonic()
        bucket = self._buckets.setdefault((user, action), _Bucket(float(per_minute), now))
        tokens = refill(bucket.tokens, now - bucket.at, per_minute)
        bucket.at = now
        if tokens < 1:
            bucket.tokens = tokens
            raise too_fast(action, per_minute, (1 - tokens) * 60.0 / per_minute)
        bucket.tokens = tokens - 1

    async def close(self) -> None:
        self._streams.clear()
        self._buckets.clear()
