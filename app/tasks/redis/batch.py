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

Outside a Cluster the batch makes its round trip on a pooled connection
itself rather than through `Pipeline.execute`: redis-py 8 hands the
connection back to the pool inside `asyncio.shield`, a task of its own, so
every batch's callers heard their replies three passes of the event loop
after they came. Under a saturated loop a pass is milliseconds, and a run's
copy (`RedisRunLogs`) is on every gated event's way to its readers. For the
same reason a caller can take its replies the moment they are read
(`on_reply`), before the loop comes round to wake it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

from redis.asyncio.client import Pipeline
from redis.asyncio.connection import Connection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from app.tasks.redis.client import RedisPipeline, connect
from app.tasks.redis.target import RedisTarget

Fill = Callable[[RedisPipeline], object]
"""Queues one caller's commands on the batch's pipeline."""
OnReply = Callable[[list[Any]], None]
"""Given a caller's replies as soon as they are read, in the batch's own step; must not raise."""


class SharedPipeline:
    """`close()` it at shutdown: it sends what is queued, then closes its client."""

    def __init__(self, target: RedisTarget | str, *, timeout: float, decode: bool = True) -> None:
        self._redis = connect(target, timeout=timeout, read_timeout=None, decode=decode)
        self._timeout = timeout
        self._queued: list[tuple[Fill, OnReply | None, asyncio.Future[list[Any]]]] = []
        self._next: asyncio.Task[None] | None = None
        """The task that will send what is queued, until its first step takes it."""
        self._sending: set[asyncio.Task[None]] = set()
        self._closed = False

    def queue(self, fill: Fill, on_reply: OnReply | None = None) -> asyncio.Future[list[Any]]:
        """The replies to the commands `fill` queues, in order; a refused command's is its error.

        Synchronous, so a caller can queue from a callback; `fill` runs when the batch
        leaves, so it puts in what is there by then. `on_reply` gets the replies first,
        a pass of the loop before the future has them.
        """
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        if self._closed:
            future.set_exception(RedisConnectionError("the Redis client is closed"))
            return future
        if self._next is None:
            # The task's first step runs at the loop's next pass, where it takes what
            # every caller of this pass queued: the batch leaves in that same step.
            self._next = asyncio.create_task(self._send())
            self._sending.add(self._next)
            self._next.add_done_callback(self._sent)
        self._queued.append((fill, on_reply, future))
        return future

    async def execute(self, fill: Fill) -> list[Any]:
        """`queue`, awaited."""
        return await self.queue(fill)

    async def command(self, fill: Fill) -> Any:
        """The reply to the one command `fill` queues; a refused command raises its error."""
        return only_reply(await self.queue(fill))

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
            for _, _, future in queued:
                future.cancel()

    async def _send(self) -> None:
        batch, self._queued, self._next = self._queued, [], None
        pipe: RedisPipeline = self._redis.pipeline(transaction=False)
        spans: list[int] = []
        try:
            for fill, _, _ in batch:
                fill(pipe)
                spans.append(len(pipe))
            async with asyncio.timeout(self._timeout):
                if isinstance(pipe, Pipeline):
                    replies = await self._round_trip(pipe)
                else:
                    replies = await pipe.execute(raise_on_error=False)
        except asyncio.CancelledError:
            for _, _, future in batch:
                future.cancel()
            raise
        except BaseException as exc:
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        start = 0
        for (_, on_reply, future), end in zip(batch, spans, strict=True):
            if not future.done():
                mine = replies[start:end]
                if on_reply is not None:
                    on_reply(mine)
                future.set_result(mine)
            start = end

    async def _round_trip(self, pipe: Pipeline) -> list[Any]:
        """The pipeline's commands sent and their replies read on one pooled connection.

        As `Pipeline.execute(raise_on_error=False)` makes it, with its one retry on a
        broken connection, but handing the connection back without a task of its own.
        """
        stack = pipe.command_stack
        pool = pipe.connection_pool
        connection = cast(Connection, await pool.get_connection())  # type: ignore[no-untyped-call]

        async def attempt() -> list[Any]:
            await connection.send_packed_command(connection.pack_commands(a for a, _ in stack))
            replies: list[Any] = []
            for args, options in stack:
                try:
                    # Passed as keywords, a copy: parsing takes some out; a retry needs them.
                    replies.append(await pipe.parse_response(connection, args[0], **options))
                except ResponseError as exc:
                    replies.append(exc)
            return replies

        async def broken(_: Exception) -> None:
            await connection.disconnect()

        try:
            return cast(list[Any], await connection.retry.call_with_retry(attempt, broken))
        except BaseException:
            # A reply left unread would be the next caller's: the connection goes.
            await connection.disconnect()
            raise
        finally:
            await pool.release(connection)


def only_reply(replies: list[Any]) -> Any:
    """The reply of a caller that queued one command; a refused command raises its error."""
    (reply,) = replies
    if isinstance(reply, Exception):
        raise reply
    return reply
