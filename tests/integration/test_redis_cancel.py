"""A task cancelled while it talks to Redis stops: the cancel is never lost in the client.

On Python 3.11, redis-py's write bounded by `asyncio.wait_for` returned normally
when the cancel came as the write ended; the task went on. Found as a service
whose shutdown waited forever on its dead-instance sweeper.
"""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest

from app.tasks.redis.client import connect

pytestmark = pytest.mark.redis

CANCELS = 300


async def test_a_task_cancelled_mid_command_stops(redis_url: str) -> None:
    client = connect(redis_url, timeout=2.0, read_timeout=2.0)
    key = f"test-cancel:{uuid.uuid4().hex}"
    pick = random.Random(43)

    # Set for a task that did not stop when cancelled, so that it ends after all.
    ran_on = asyncio.Event()

    async def commands() -> None:
        while not ran_on.is_set():
            await client.set(key, "1", px=10_000)
            await client.get(key)

    stopped = 0
    try:
        for _ in range(CANCELS):
            task = asyncio.create_task(commands())
            # Anywhere in a command: a round trip here takes about a tenth of a millisecond.
            await asyncio.sleep(pick.uniform(0, 0.002))
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=3.0)
            if not done:
                ran_on.set()
                await task
                break
            stopped += task.cancelled()
    finally:
        await client.delete(key)
        await client.aclose()

    assert stopped == CANCELS
