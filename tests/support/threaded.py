"""Run an async context (a served app, a fake upstream) on an event loop of its own thread.

For tests that must stay synchronous while the service runs: schemathesis and
hypothesis drive plain functions, and call the service through blocking
clients, which would stall a service served in the test's own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

T = TypeVar("T")
START_SECONDS = 60.0


@contextlib.contextmanager
def in_thread(factory: Callable[[], AbstractAsyncContextManager[T]]) -> Iterator[T]:
    """Enter `factory()` on a new thread's loop; yield what it yields; exit it there at the end."""
    started: queue.Queue[tuple[T, asyncio.Event] | BaseException] = queue.Queue()
    loop = asyncio.new_event_loop()

    async def hold() -> None:
        finished = asyncio.Event()
        try:
            async with factory() as value:
                started.put((value, finished))
                await finished.wait()
        except BaseException as exc:
            started.put(exc)
            raise

    thread = threading.Thread(target=loop.run_until_complete, args=(hold(),), daemon=True)
    thread.start()
    try:
        item = started.get(timeout=START_SECONDS)
        if isinstance(item, BaseException):
            raise item
        value, finished = item
        try:
            yield value
        finally:
            loop.call_soon_threadsafe(finished.set)
    finally:
        thread.join()
        loop.close()
