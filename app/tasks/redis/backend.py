"""The Redis task backend: claims, queues and lists of runs shared by every instance.

Each role is a module of its own (`claims`, `queue`, `board`, and
`instances` for the dead-instance sweep); they share one connection, one
batching pipeline and one key scheme (`shared`). This module builds them
(`redis_tasks`) and runs what the instance needs while it lives: the claims'
heartbeat, and the listener.

Each instance holds one pub/sub connection subscribed to the stop, done and
queue channels: stop messages go to the stop handler (which alone knows
whether the run is local), done messages wake the local `request_stop`
calls waiting for that conversation to be free and the queued turns waiting
for it, queue messages only the queued turns.

The listener outlives Redis restarts: it reconnects with capped, jittered
backoff and logs once per outage. Commands never retry and time out within
seconds, so while Redis is away callers get `TaskBackendUnavailable` at once
instead of a hung request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from typing import Any

from redis.exceptions import RedisError

from app.tasks.base import StopHandler, TaskBackendUnavailable, Tasks
from app.tasks.redis.board import RedisBoard
from app.tasks.redis.claims import RedisClaims
from app.tasks.redis.client import subscription, translate_errors
from app.tasks.redis.instances import RedisInstances
from app.tasks.redis.queue import RedisQueue
from app.tasks.redis.shared import RedisTaskSpace
from app.tasks.redis.target import RedisTarget

logger = logging.getLogger(__name__)

_BACKOFF_FIRST_SECONDS = 0.05
_BACKOFF_MAX_SECONDS = 2.0


def redis_tasks(
    target: RedisTarget | str,
    prefix: str,
    instance_id: str,
    *,
    timeout: float = 2.0,
    dead_after: float = 15.0,
) -> Tasks:
    """The roles on one Redis; `start()` the backend once, `close()` it at shutdown.

    `instance_id` names this process in the claims it writes, so an operator
    reading Redis can tell which instance runs a conversation. `timeout` bounds
    each connect and command; `dead_after` is `INSTANCE_DEAD_SECONDS`.
    """
    space = RedisTaskSpace(target, prefix, instance_id, timeout)
    claims = RedisClaims(space, dead_after)
    return Tasks(
        backend=RedisTaskBackend(space, claims),
        claims=claims,
        queue=RedisQueue(space, claims),
        board=RedisBoard(space, claims),
        batch_release=claims,
        instances=RedisInstances(space, dead_after),
        takeovers=claims,
    )


class RedisTaskBackend:
    """The connection's life, the listener and the heartbeat (closing is idempotent)."""

    def __init__(self, space: RedisTaskSpace, claims: RedisClaims) -> None:
        self._space = space
        self._keys = space.keys
        self._where = space.where
        self._claims = claims
        self._listener: asyncio.Task[None] | None = None
        self._beater: asyncio.Task[None] | None = None
        self._first_attempt = asyncio.Event()
        self._subscribed = False
        self._closed = False
        self._stops_in_flight: set[asyncio.Task[None]] = set()

    async def start(self, on_stop: StopHandler) -> None:
        """Return once subscribed, so a stop sent right after start-up is heard.

        A Redis that is down does not fail start-up: the listener keeps
        reconnecting in the background, and `ping()` reports the outage.
        """
        if self._listener is not None or self._closed:
            raise RuntimeError("a Redis task backend is started once")
        instance = self._keys.instance_id
        self._listener = asyncio.create_task(
            self._listen(on_stop), name=f"task-stop-listener-{instance}"
        )
        self._beater = asyncio.create_task(
            self._claims.heartbeat(), name=f"instance-heartbeat-{instance}"
        )
        await self._first_attempt.wait()
        await self._claims.first_beat.wait()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        running = (self._listener, self._beater, *self._stops_in_flight)
        pending = [task for task in running if task is not None]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self._space.close()

    async def ping(self) -> None:
        """Also fail while the listener reconnects: this instance cannot hear stops then."""
        with translate_errors(self._where):
            await self._space.redis.ping()
        if self._listener is not None and not self._subscribed:
            raise TaskBackendUnavailable(
                f"Redis at {self._where} answers but the stop listener is not subscribed yet"
            )

    async def _listen(self, on_stop: StopHandler) -> None:
        """Hold the one subscription for the backend's lifetime, reconnecting after any loss."""
        keys = self._keys
        failed_attempts = 0
        while True:
            try:
                async with await subscription(self._space.redis) as pubsub:
                    await pubsub.subscribe(keys.stop_channel, keys.done_channel, keys.queue_channel)
                    if failed_attempts:
                        logger.info("Redis task listener subscribed again at %s", self._where)
                        failed_attempts = 0
                        self._claims.beat_soon()  # Redis may have restarted empty: claims back now
                    self._subscribed = True
                    self._first_attempt.set()
                    await self._wake_waiters_of_ended_claims()
                    while True:
                        message = await pubsub.get_message(
                            ignore_subscribe_messages=True, timeout=None
                        )
                        if message is not None:
                            self._dispatch(message, on_stop)
            except Exception as exc:
                # Whatever broke, a dead listener would silently stop all
                # cross-instance stops: reconnect; a traceback only for a bug.
                self._subscribed = False
                self._first_attempt.set()
                if not failed_attempts:
                    logger.warning(
                        "Redis task listener cannot reach %s (%s); retrying, and stops"
                        " sent from other instances are not heard meanwhile",
                        self._where,
                        type(exc).__name__,
                        exc_info=not isinstance(exc, RedisError | OSError),
                    )
                delay = min(_BACKOFF_MAX_SECONDS, _BACKOFF_FIRST_SECONDS * 2**failed_attempts)
                failed_attempts += 1
                await asyncio.sleep(random.uniform(delay / 2, delay))

    async def _wake_waiters_of_ended_claims(self) -> None:
        """Done messages published while unsubscribed are lost: look at the keys instead."""
        wakeups = self._space.wakeups
        for key in list(wakeups.ended):
            if not await self._space.redis.exists(self._keys.claim(*key)):
                wakeups.claim_ended(key)
        for key in list(wakeups.changed):
            wakeups.queue_changed(key)

    def _dispatch(self, message: dict[str, Any], on_stop: StopHandler) -> None:
        try:
            body = json.loads(message["data"])
            key = (str(body["user_id"]), str(body["conversation_id"]))
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring a malformed message on %s", message.get("channel"))
            return
        if message["channel"] == self._keys.done_channel:
            self._space.wakeups.claim_ended(key)
            return
        if message["channel"] == self._keys.queue_channel:
            self._space.wakeups.queue_changed(key)
            return
        # A task of its own: a slow handler must not hold up other stops or done messages.
        delivery = asyncio.create_task(_deliver_stop(on_stop, *key))
        self._stops_in_flight.add(delivery)
        delivery.add_done_callback(self._stops_in_flight.discard)


async def _deliver_stop(on_stop: StopHandler, user_id: str, conversation_id: str) -> None:
    try:
        await on_stop(user_id, conversation_id)
    except Exception:
        # Nobody awaits this task: log here, or the failure surfaces only at garbage collection.
        logger.exception("stop handler failed for conversation %s", conversation_id)
