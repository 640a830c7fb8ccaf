"""Waiting for a state another process, or a background task, reaches on its own schedule."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> float:
    """Poll `check` until it holds; the seconds that took. Fails the test after `within` seconds."""
    began = time.monotonic()
    while not await check():
        if time.monotonic() - began > within:
            pytest.fail(f"the expected state never came within {within} s")
        await asyncio.sleep(0.05)
    return time.monotonic() - began
