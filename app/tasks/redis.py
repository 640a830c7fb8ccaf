"""The Redis task manager: claims and stops shared by every instance of the service.

A claim is one key, `{prefix}task:{user}:{conversation}`, set with NX and a
TTL and holding `{task_id, agent_type, instance}`. Refresh and release are
Lua scripts, so comparing the task id and touching the key are one atomic
step: a run whose claim expired and was retaken must never extend or delete
the new owner's key.

A stop is published on `{prefix}stop`, a release on `{prefix}done`. Each
instance holds one pub/sub connection subscribed to both: stop messages go to
the stop handler (which alone knows whether the run is local), done messages
wake the local `request_stop` calls waiting for that conversation to be free.

The listener outlives Redis restarts: it reconnects with capped, jittered
backoff and logs once per outage. Commands never retry and time out within
seconds, so while Redis is away callers get `TaskBackendUnavailable` at once
instead of a hung request.

Left out: TTL-expiry notifications (keyspace events need server-side
configuration), so a stop whose owner died waits its full `wait` before it
answers; the claim then expires on its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from app.tasks.base import Claim, StopHandler, TaskBackendUnavailable

logger = logging.getLogger(__name__)

_Key = tuple[str, str]

_MAX_CONNECTIONS = 64
"""Connections per instance; commands take a millisecond, so a few dozen serve many streams."""
_POOL_WAIT_SECONDS = 30.0
"""Longest wait for a free connection: a burst of a thousand claims queues, it is not refused."""
_BACKOFF_FIRST_SECONDS = 0.05
_BACKOFF_MAX_SECONDS = 2.0

# KEYS[1] claim key; ARGV: task id, new TTL in ms. 1 when the claim was ours and extended.
_REFRESH_LUA = """
local value = redis.call('GET', KEYS[1])
if value and cjson.decode(value)['task_id'] == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

# KEYS[1] claim key; ARGV: task id, done channel, done message. Publishing in
# the same step as the delete means no waiter can see the key gone yet miss the message.
_RELEASE_LUA = """
local value = redis.call('GET', KEYS[1])
if value and cjson.decode(value)['task_id'] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return 1
end
return 0
"""


class RedisTaskManager:
    """Build it, `start()` it once, `close()` it at shutdown (closing is idempotent).

    `timeout` bounds each connect and each command: it is how long a request
    may hang on a Redis that stopped answering before it gets a 503.
    """

    def __init__(self, url: str, prefix: str, instance_id: str, *, timeout: float = 2.0) -> None:
        # No retries, said explicitly: the Redis() constructor of redis-py 6+
        # defaults to ten with backoff, which would hold every request for
        # seconds while Redis is down. A pooled connection the server closed
        # is replaced when checked out, so a Redis restart needs no retry.
        # redis-py's default pool fails the 101st concurrent command with "Too many
        # connections": a burst of new streams answered 503. This one queues them.
        pool = BlockingConnectionPool.from_url(
            url,
            max_connections=_MAX_CONNECTIONS,
            timeout=_POOL_WAIT_SECONDS,
            decode_responses=True,
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        self._redis = Redis.from_pool(pool)
        self._where = _redacted(url)
        self._prefix = prefix
        self._instance_id = instance_id
        self._stop_channel = f"{prefix}stop"
        self._done_channel = f"{prefix}done"
        self._refresh_script = self._redis.register_script(_REFRESH_LUA)
        self._release_script = self._redis.register_script(_RELEASE_LUA)
        self._listener: asyncio.Task[None] | None = None
        self._first_attempt = asyncio.Event()
        self._subscribed = False
        self._closed = False
        self._waiters: dict[_Key, set[asyncio.Future[None]]] = {}
        self._stops_in_flight: set[asyncio.Task[None]] = set()

    async def start(self, on_stop: StopHandler) -> None:
        """Return once subscribed, so a stop sent right after start-up is heard.

        A Redis that is down does not fail start-up: the listener keeps
        reconnecting in the background, and `ping()` reports the outage.
        """
        if self._listener is not None or self._closed:
            raise RuntimeError("a RedisTaskManager is started once")
        self._listener = asyncio.create_task(
            self._listen(on_stop), name=f"task-stop-listener-{self._instance_id}"
        )
        await self._first_attempt.wait()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        pending = [task for task in (self._listener, *self._stops_in_flight) if task is not None]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self._redis.aclose()

    async def claim(self, claim: Claim, ttl: float) -> bool:
        value = json.dumps(
            {
                "task_id": claim.task_id,
                "agent_type": claim.agent_type,
                "instance": self._instance_id,
            }
        )
        key = self._key(claim.user_id, claim.conversation_id)
        with self._translate_errors():
            return bool(await self._redis.set(key, value, nx=True, px=_milliseconds(ttl)))

    async def refresh(self, claim: Claim, ttl: float) -> bool:
        key = self._key(claim.user_id, claim.conversation_id)
        with self._translate_errors():
            extended = await self._refresh_script(
                keys=[key], args=[claim.task_id, _milliseconds(ttl)]
            )
        return bool(extended)

    async def release(self, claim: Claim) -> None:
        key = self._key(claim.user_id, claim.conversation_id)
        done = _message(claim.user_id, claim.conversation_id)
        with self._translate_errors():
            await self._release_script(keys=[key], args=[claim.task_id, self._done_channel, done])

    async def current(self, user_id: str, conversation_id: str) -> Claim | None:
        with self._translate_errors():
            value = await self._redis.get(self._key(user_id, conversation_id))
        if value is None:
            return None
        stored = json.loads(value)
        return Claim(user_id, conversation_id, stored["task_id"], stored["agent_type"])

    async def request_stop(self, user_id: str, conversation_id: str, wait: float) -> bool:
        if self._listener is None:
            raise RuntimeError("start() the task manager before stopping tasks")
        key = (user_id, conversation_id)
        ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters.setdefault(key, set())
        waiters.add(ended)
        try:
            # Registered before the existence check: a release landing between
            # the check and the wait still wakes this call.
            with self._translate_errors():
                if not await self._redis.exists(self._key(user_id, conversation_id)):
                    return False
                await self._redis.publish(self._stop_channel, _message(user_id, conversation_id))
            with suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await ended
            return True
        finally:
            waiters.discard(ended)
            if not waiters:
                del self._waiters[key]

    async def ping(self) -> None:
        """Also fail while the listener reconnects: this instance cannot hear stops then."""
        with self._translate_errors():
            await self._redis.ping()
        if self._listener is not None and not self._subscribed:
            raise TaskBackendUnavailable(
                f"Redis at {self._where} answers but the stop listener is not subscribed yet"
            )

    def _key(self, user_id: str, conversation_id: str) -> str:
        return f"{self._prefix}task:{user_id}:{conversation_id}"

    @contextmanager
    def _translate_errors(self) -> Iterator[None]:
        """Callers handle one error; its text names the server but never the URL's password."""
        try:
            yield
        except (RedisError, OSError) as exc:
            raise TaskBackendUnavailable(
                f"Redis at {self._where} failed: {type(exc).__name__}"
            ) from exc

    async def _listen(self, on_stop: StopHandler) -> None:
        """Hold the one subscription for the manager's lifetime, reconnecting after any loss."""
        failed_attempts = 0
        while True:
            try:
                async with self._redis.pubsub() as pubsub:
                    await pubsub.subscribe(self._stop_channel, self._done_channel)
                    if failed_attempts:
                        logger.info("Redis task listener subscribed again at %s", self._where)
                        failed_attempts = 0
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
        for key in list(self._waiters):
            if not await self._redis.exists(self._key(*key)):
                self._wake(key)

    def _dispatch(self, message: dict[str, Any], on_stop: StopHandler) -> None:
        try:
            body = json.loads(message["data"])
            key = (str(body["user_id"]), str(body["conversation_id"]))
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring a malformed message on %s", message.get("channel"))
            return
        if message["channel"] == self._done_channel:
            self._wake(key)
            return
        # A task of its own: a slow handler must not hold up other stops or done messages.
        delivery = asyncio.create_task(_deliver_stop(on_stop, *key))
        self._stops_in_flight.add(delivery)
        delivery.add_done_callback(self._stops_in_flight.discard)

    def _wake(self, key: _Key) -> None:
        for waiter in self._waiters.get(key, ()):
            if not waiter.done():
                waiter.set_result(None)


async def _deliver_stop(on_stop: StopHandler, user_id: str, conversation_id: str) -> None:
    try:
        await on_stop(user_id, conversation_id)
    except Exception:
        # Nobody awaits this task: log here, or the failure surfaces only at garbage collection.
        logger.exception("stop handler failed for conversation %s", conversation_id)


def _message(user_id: str, conversation_id: str) -> str:
    return json.dumps({"user_id": user_id, "conversation_id": conversation_id})


def _milliseconds(ttl: float) -> int:
    return max(1, round(ttl * 1000))


def _redacted(url: str) -> str:
    """The URL without credentials (user info, or a `password=` query) for messages and logs."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query=""))
