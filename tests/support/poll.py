"""Waiting for a state a server reaches on its own schedule (a sweep, a dropped connection)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest


async def eventually(check: Callable[[], Awaitable[bool]]) -> None:
    """Look (up to 10 s) until `check` holds; fail the test if it never does."""
    for _ in range(200):
        if await check():
            return
        await asyncio.sleep(0.05)
    pytest.fail("the expected state never came")
