"""Waiting for a state another process, or a background task, reaches on its own schedule."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

POLL_SECONDS = 0.05


async def eventually(
    check: Callable[[], Awaitable[bool]], within: float = 10.0, what: str = "the expected state"
) -> float:
    """Poll `check` until it holds; the seconds that took. Fails the test after `within` seconds.

    Only for what cannot be awaited: a state in another process, or one reached on a
    timer there. Within the test's own process, await the event itself.
    """
    began = time.monotonic()
    while not await check():
        if time.monotonic() - began > within:
            pytest.fail(f"{what} did not come within {within:g} s")
        await asyncio.sleep(POLL_SECONDS)
    return time.monotonic() - began
