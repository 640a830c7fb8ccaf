"""Waiting for a state another process reaches on its own schedule, with a bound."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

POLL_SECONDS = 0.05


async def eventually(
    check: Callable[[], Awaitable[bool]], within: float = 10.0, what: str = "the expected state"
) -> None:
    """Return once `check()` is true; fail the test when it is not within `within` seconds.

    Only for what cannot be awaited: a state in another process, or one reached on a
    timer there. Within the test's own process, await the event itself.
    """
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not come within {within:g} s")
        await asyncio.sleep(POLL_SECONDS)
