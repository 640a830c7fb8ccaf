"""Limits an admin set for one user (`PUT /admin/users/{id}/limits`), over the settings'.

They are stored in the database (`user_limit`), so every instance applies
them: each keeps all of them in memory (a deployment has few), read at
start, again by the instance that took a change at once, and by the others
every `REFRESH_SECONDS`, in the background, so no turn waits on the read.
Until a refresh succeeds an instance keeps what it read before.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging

from app.limits.base import Action, Rates, StreamSlot, UserLimits
from app.store.base import StoreError
from app.store.user_limits import LimitOverride, SqlUserLimits

log = logging.getLogger(__name__)

REFRESH_SECONDS = 30.0
"""How soon the other instances apply a change an admin made on one."""


class AdjustedLimits:
    """A `UserLimits` that gives each user their own rates where an admin set them."""

    def __init__(self, inner: UserLimits, rates: Rates, stored: SqlUserLimits) -> None:
        self._inner = inner
        self.rates = rates
        self._stored = stored
        self._overrides: dict[str, LimitOverride] = {}
        self._refresher: asyncio.Task[None] | None = None

    async def start(self, refresh_seconds: float = REFRESH_SECONDS) -> None:
        await self.reload()
        self._refresher = asyncio.create_task(self._refresh(refresh_seconds))

    async def reload(self) -> None:
        self._overrides = await self._stored.all()

    async def set(self, user: str, override: LimitOverride) -> Rates:
        await self._stored.put(user, override)
        await self.reload()
        return self.rates_of(user)

    def rates_of(self, user: str) -> Rates:
        override = self._overrides.get(user)
        if override is None:
            return self.rates
        changed = {
            name: value for name, value in dataclasses.asdict(override).items() if value is not None
        }
        return dataclasses.replace(self.rates, **changed)

    def overridden(self) -> dict[str, LimitOverride]:
        return dict(self._overrides)

    async def open_stream(self, user: str, run_id: str, rates: Rates | None = None) -> StreamSlot:
        return await self._inner.open_stream(user, run_id, rates or self.rates_of(user))

    async def take(self, user: str, action: Action, rates: Rates | None = None) -> None:
        await self._inner.take(user, action, rates or self.rates_of(user))

    async def close(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
        await self._inner.close()

    async def _refresh(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await self.reload()
            except StoreError as exc:
                log.warning("per-user limits could not be read again: %s", exc)
