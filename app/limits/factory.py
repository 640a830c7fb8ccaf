"""The limits' part of the app: the per-user limits from the settings, with the overrides
an admin stored, refreshed until the lifespan's stack closes."""

from __future__ import annotations

from contextlib import AsyncExitStack

from app.config import Settings
from app.limits import Rates, build_user_limits
from app.limits.adjusted import AdjustedLimits
from app.store.user_limits import SqlUserLimits


async def build(
    settings: Settings, *, stack: AsyncExitStack, stored: SqlUserLimits
) -> AdjustedLimits:
    limits = AdjustedLimits(build_user_limits(settings), Rates.from_settings(settings), stored)
    await limits.start()
    stack.push_async_callback(limits.close)
    return limits
