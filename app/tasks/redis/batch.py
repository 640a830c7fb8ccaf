"""Concurrent turns' Redis commands sent together: one pipeline, one round trip.

Under load dozens of turns each send Redis a command or a short pipeline at
nearly the same moment (a claim, a copy of the run log, a release), and a
round trip costs the client a write, a wake-up and a read: in redis-py
about 0.1 ms of CPU, more than the commands in it. `SharedPipeline` queues
what its callers hand it during one pass of the event loop and sends all of
it as one pipeline at the next pass, so that cost is paid once per batch,
not once per caller. A caller alone waits no longer than before: nothing
lingers, the batch leaves as soon as the loop comes round. In a Redis
Cluster the batch is split by node and leaves for every node at once.

Replies come back to each caller in the order it queued its commands. A
command's error (a `ResponseError`) is its caller's reply, not raised, so
one caller's refused command cannot fail another's; an error of the
connection fails everyone in the batch, as it would have failed each of
their own round trips.

The pipeline has a client of its own, whose replies carry no timeout each:
redis-py arms a timer for every reply it reads (a quarter of a batch's
client CPU), and a batch's replies arrive together. One timer bounds the
whole round trip instead, so a Redis that stopped answering still fails
the batch's callers after `timeout`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

from app.tasks.redis.client import RedisPipeline, connect
from app.tasks.redis.target import RedisTarget

Fill = Callable[[RedisPipeline], object]
"""Queues one caller's commands on the batch's pipeline."""


class SharedPipeline:
    """`close()` it at shutdown: it sends what is queued, then closes its client."""

    def __init__(self, target: RedisTarget | str, *, timeout: float, decode: bool = True) -> None:
        self._redis = connect(target, timeout=timeout, read_timeout=None, decode=decode)
        self._timeout = timeout
        self._queued: list[tuple[Fill, asyncio.Future[list[Any]]]] = []
        self._next: asyncio.Task[None] | None = None
        """The task that will send what is queued, until its first step takes it."""
        self._sending: set[asyncio.Task[None]] = set()
        self._closed = False

    async def execute(self, fill: Fill) -> list[Any]:
        """The replies to the commands `fill` queues, in order; a refused command's is its error."""
        if self._closed:
            raise RedisConnectionError("the Redis client is closed")
        if self._next is None:
            # The task's first step runs at the loop's next pass, where it takes what
            # every caller of this pass queued: the batch leaves in that same step.
            self._next = asyncio.create_task(self._send())
            self._sending.add(self._next)
            self._next.add_done_callback(self._sent)
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._queued.append((fill, future))
        return await future

    async def command(self, fill: Fill) -> Any:
        """The reply to the one command `fill` queues; a refused command raises its error."""
        (reply,) = await self.execute(fill)
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def close(self) -> None:
        """Let every batch leave and finish, so each caller gets its replies."""
        self._closed = True
        await asyncio.gather(*self._sending, return_exceptions=True)
        await self._redis.aclose()

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._sending.discard(task)
        if task is self._next:  # cancelled before it took its batch: its callers must know
            self._next = None
            queued, self._queued = self._queued, []
            for _, future in queued:
                future.cancel()

    async def _send(self) -> None:
        batch, self._queued, self._next = self._queued, [], None
        pipe: RedisPipeline = self._redis.pipeline(transaction=False)
        spans: list[int] = []
        try:
            for fill, _ in batch:
                fill(pipe)
                spans.append(len(pipe))
            async with asyncio.timeout(self._timeout):
                replies = await pipe.execute(raise_on_error=False)
        except asyncio.CancelledError:
            for _, future in batch:
                future.cancel()
            raise
        except BaseException as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        start = 0
        for (_, future), end in zip(batch, spans, strict=True):
            if not future.done():
                future.set_result(replies[start:end])
            start = end
