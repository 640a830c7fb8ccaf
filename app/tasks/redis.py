"""The Redis task manager: claims and stops shared by every instance of the service.

A claim is one key, `{prefix}task:{user}:{conversation}`, set with NX and a
TTL and holding `{task_id, agent_type, instance}`. Refresh and release are
Lua scripts, so comparing the task id and touching the key are one atomic
step: a run whose claim expired and was retaken must never extend or delete
the new owner's key.

Double texting adds a queue per conversation, `{prefix}queue:{user}:{conversation}`
(a list of task ids, oldest first), each ticket alive while its waiter keeps
`{prefix}queued:{task_id}` from expiring; taking the claim from the head of
the queue is one Lua step. The caller's list of runs is a hash per user,
`{prefix}board:{user}`, task id -> ticket; an entry whose claim or ticket is
gone is dropped when the list is read, so a dead instance leaves nothing shown.

A stop is published on `{prefix}stop`, a release on `{prefix}done`, a change
of a queue (a ticket left, a stop cleared it) on `{prefix}queue`: that one
wakes only queued turns, never a stop waiting for its run to end. Each
instance holds one pub/sub connection subscribed to all three: stop messages
go to the stop handler (which alone knows whether the run is local), done
messages wake the local `request_stop` calls waiting for that conversation to
be free, and the queued turns waiting for it.

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
from collections.abc import Iterable
from contextlib import suppress
from datetime import datetime
from typing import Any, cast

from redis.asyncio.client import Pipeline
from redis.exceptions import RedisError

from app.tasks.base import Claim, QueueState, StopHandler, TaskBackendUnavailable, Ticket
from app.tasks.redis_batch import SharedPipeline
from app.tasks.redis_client import connect, milliseconds, redacted, translate_errors

logger = logging.getLogger(__name__)

_Key = tuple[str, str]

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

# KEYS[1] claim key, KEYS[2] the user's list of runs; ARGV: claim value, TTL in ms, task
# id, the turn as listed. The turn is listed only if the claim is taken.
_CLAIM_POSTING_LUA = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
  return 1
end
return 0
"""

# KEYS[1] claim key, KEYS[2] the user's list of runs; ARGV: task id, done channel, done
# message. The turn leaves the list whether or not the claim is still its. Publishing in
# the same step as the delete means no waiter can see the key gone yet miss the message.
_RELEASE_LUA = """
redis.call('HDEL', KEYS[2], ARGV[1])
local value = redis.call('GET', KEYS[1])
if value and cjson.decode(value)['task_id'] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return 1
end
return 0
"""


# KEYS[1] queue, KEYS[2] claim; ARGV: task id, claim value, TTL in ms, ticket key prefix.
# Tickets ahead whose waiters stopped keeping them are dropped on the way to the head.
_CLAIM_QUEUED_LUA = """
if redis.call('EXISTS', ARGV[4] .. ARGV[1]) == 0 then
  redis.call('LREM', KEYS[1], 0, ARGV[1])
  return 'gone'
end
while true do
  local head = redis.call('LINDEX', KEYS[1], 0)
  if not head then return 'gone' end
  if head == ARGV[1] then break end
  if redis.call('EXISTS', ARGV[4] .. head) == 1 then return 'waiting' end
  redis.call('LPOP', KEYS[1])
end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then
  redis.call('LPOP', KEYS[1])
  redis.call('DEL', ARGV[4] .. ARGV[1])
  return 'claimed'
end
return 'waiting'
"""


class RedisTaskManager:
    """Build it, `start()` it once, `close()` it at shutdown (closing is idempotent).

    `timeout` bounds each connect and each command: it is how long a request
    may hang on a Redis that stopped answering before it gets a 503.
    """

    def __init__(self, url: str, prefix: str, instance_id: str, *, timeout: float = 2.0) -> None:
        self._redis = connect(url, timeout=timeout, read_timeout=timeout)
        self._where = redacted(url)
        self._prefix = prefix
        self._instance_id = instance_id
        self._stop_channel = f"{prefix}stop"
        self._done_channel = f"{prefix}done"
        self._queue_channel = f"{prefix}queue"
        self._batch = SharedPipeline(url, timeout=timeout)
        self._claim_queued_script = self._redis.register_script(_CLAIM_QUEUED_LUA)
        self._listener: asyncio.Task[None] | None = None
        self._first_attempt = asyncio.Event()
        self._subscribed = False
        self._closed = False
        self._waiters: dict[_Key, set[asyncio.Future[None]]] = {}
        self._queue_waiters: dict[_Key, set[asyncio.Future[None]]] = {}
        """Queued turns waiting for a release or a queue change (`wait_released`)."""
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
        await self._batch.close()
        await self._redis.aclose()

    async def claim(self, claim: Claim, ttl: float, ticket: Ticket | None = None) -> bool:
        key = self._key(claim.user_id, claim.conversation_id)
        value, expiry = self._claim_value(claim), milliseconds(ttl)

        def fill(pipe: Pipeline) -> None:
            if ticket is None:
                pipe.set(key, value, nx=True, px=expiry)
            else:
                board, listed = self._board_key(claim.user_id), _listed(ticket)
                pipe.eval(_CLAIM_POSTING_LUA, 2, key, board, value, expiry, ticket.task_id, listed)

        with translate_errors(self._where):
            return bool(await self._batch.command(fill))

    def _claim_value(self, claim: Claim) -> str:
        return json.dumps(
            {
                "task_id": claim.task_id,
                "agent_type": claim.agent_type,
                "instance": self._instance_id,
            }
        )

    async def refresh(self, claim: Claim, ttl: float) -> bool:
        key = self._key(claim.user_id, claim.conversation_id)
        expiry = milliseconds(ttl)
        with translate_errors(self._where):
            extended = await self._batch.command(
                lambda pipe: pipe.eval(_REFRESH_LUA, 1, key, claim.task_id, expiry)
            )
        return bool(extended)

    async def release(self, claim: Claim) -> None:
        with translate_errors(self._where):
            await self._batch.command(lambda pipe: self.release_in(pipe, claim))

    def release_in(self, pipe: Pipeline, claim: Claim) -> None:
        """Queue `release` on `pipe`, to share a round trip (the run log's last batch).

        EVAL, not a registered script: a script object on a pipeline costs a
        SCRIPT EXISTS round trip on every execute.
        """
        key = self._key(claim.user_id, claim.conversation_id)
        done = _message(claim.user_id, claim.conversation_id)
        board = self._board_key(claim.user_id)
        pipe.eval(_RELEASE_LUA, 2, key, board, claim.task_id, self._done_channel, done)

    async def current(self, user_id: str, conversation_id: str) -> Claim | None:
        with translate_errors(self._where):
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
            with translate_errors(self._where):
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
        with translate_errors(self._where):
            await self._redis.ping()
        if self._listener is not None and not self._subscribed:
            raise TaskBackendUnavailable(
                f"Redis at {self._where} answers but the stop listener is not subscribed yet"
            )

    async def join_queue(self, claim: Claim, ttl: float) -> int:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._ticket_key(claim.task_id), "1", px=milliseconds(ttl))
            pipe.rpush(self._queue_key(claim.user_id, claim.conversation_id), claim.task_id)
            with translate_errors(self._where):
                _, position = await pipe.execute()
        return int(position)

    async def keep_queued(self, claim: Claim, ttl: float) -> bool:
        with translate_errors(self._where):
            return bool(
                await self._redis.pexpire(self._ticket_key(claim.task_id), milliseconds(ttl))
            )

    async def claim_queued(self, claim: Claim, ttl: float) -> QueueState:
        keys = [
            self._queue_key(claim.user_id, claim.conversation_id),
            self._key(claim.user_id, claim.conversation_id),
        ]
        args: list[str | int] = [
            claim.task_id,
            self._claim_value(claim),
            milliseconds(ttl),
            self._ticket_key(""),
        ]
        with translate_errors(self._where):
            state = await self._claim_queued_script(keys=keys, args=args)
        return cast(QueueState, state)

    async def leave_queue(self, claim: Claim) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._ticket_key(claim.task_id))
            pipe.lrem(self._queue_key(claim.user_id, claim.conversation_id), 0, claim.task_id)
            pipe.publish(self._queue_channel, _message(claim.user_id, claim.conversation_id))
            with translate_errors(self._where):
                await pipe.execute()

    async def clear_queue(self, user_id: str, conversation_id: str) -> int:
        queue = self._queue_key(user_id, conversation_id)
        with translate_errors(self._where):
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.lrange(queue, 0, -1)
                pipe.delete(queue)
                tickets, _ = await pipe.execute()
            if tickets:
                await self._redis.delete(*(self._ticket_key(t) for t in tickets))
            await self._redis.publish(self._queue_channel, _message(user_id, conversation_id))
        return len(tickets)

    async def wait_released(self, user_id: str, conversation_id: str, wait: float) -> None:
        key = (user_id, conversation_id)
        changed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._queue_waiters.setdefault(key, set())
        waiters.add(changed)
        try:
            with suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await changed
        finally:
            waiters.discard(changed)
            if not waiters:
                del self._queue_waiters[key]

    async def post(self, ticket: Ticket) -> None:
        with translate_errors(self._where):
            await self._redis.hset(self._board_key(ticket.user_id), ticket.task_id, _listed(ticket))

    async def unpost(self, ticket: Ticket) -> None:
        with translate_errors(self._where):
            await self._redis.hdel(self._board_key(ticket.user_id), ticket.task_id)

    async def posted(self, user_id: str) -> list[Ticket]:
        board = self._board_key(user_id)
        with translate_errors(self._where):
            entries = await self._redis.hgetall(board)
            tickets = [_ticket(user_id, str(k), str(v)) for k, v in entries.items()]
            async with self._redis.pipeline(transaction=False) as pipe:
                for ticket in tickets:
                    if ticket.status == "running":
                        pipe.get(self._key(user_id, ticket.conversation_id))
                    else:
                        pipe.exists(self._ticket_key(ticket.task_id))
                found = await pipe.execute()
            alive = [t for t, f in zip(tickets, found, strict=True) if _alive(t, f)]
            stale = [t.task_id for t in tickets if t not in alive]
            if stale:
                await self._redis.hdel(board, *stale)
        return sorted(alive, key=lambda t: t.started_at)

    def _key(self, user_id: str, conversation_id: str) -> str:
        return f"{self._prefix}task:{user_id}:{conversation_id}"

    def _queue_key(self, user_id: str, conversation_id: str) -> str:
        return f"{self._prefix}queue:{user_id}:{conversation_id}"

    def _ticket_key(self, task_id: str) -> str:
        return f"{self._prefix}queued:{task_id}"

    def _board_key(self, user_id: str) -> str:
        return f"{self._prefix}board:{user_id}"

    async def _listen(self, on_stop: StopHandler) -> None:
        """Hold the one subscription for the manager's lifetime, reconnecting after any loss."""
        failed_attempts = 0
        while True:
            try:
                async with self._redis.pubsub() as pubsub:
                    await pubsub.subscribe(
                        self._stop_channel, self._done_channel, self._queue_channel
                    )
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
        for key in list(self._queue_waiters):
            _resolve_all(self._queue_waiters[key])

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
        if message["channel"] == self._queue_channel:
            # Not a release: a stop waiting for the run to end must not wake on it.
            _resolve_all(self._queue_waiters.get(key, ()))
            return
        # A task of its own: a slow handler must not hold up other stops or done messages.
        delivery = asyncio.create_task(_deliver_stop(on_stop, *key))
        self._stops_in_flight.add(delivery)
        delivery.add_done_callback(self._stops_in_flight.discard)

    def _wake(self, key: _Key) -> None:
        _resolve_all(self._waiters.get(key, ()))
        _resolve_all(self._queue_waiters.get(key, ()))


async def _deliver_stop(on_stop: StopHandler, user_id: str, conversation_id: str) -> None:
    try:
        await on_stop(user_id, conversation_id)
    except Exception:
        # Nobody awaits this task: log here, or the failure surfaces only at garbage collection.
        logger.exception("stop handler failed for conversation %s", conversation_id)


def _resolve_all(waiters: Iterable[asyncio.Future[None]]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)


def _listed(ticket: Ticket) -> str:
    """The turn as its user's list of runs holds it (`_ticket` reads it back)."""
    return json.dumps(
        {
            "conversation_id": ticket.conversation_id,
            "agent_type": ticket.agent_type,
            "question": ticket.question,
            "started_at": ticket.started_at.isoformat(),
            "status": ticket.status,
        }
    )


def _ticket(user_id: str, task_id: str, raw: str) -> Ticket:
    stored = json.loads(raw)
    return Ticket(
        user_id=user_id,
        conversation_id=stored["conversation_id"],
        task_id=task_id,
        agent_type=stored["agent_type"],
        question=stored["question"],
        started_at=datetime.fromisoformat(stored["started_at"]),
        status=stored["status"],
    )


def _alive(ticket: Ticket, found: Any) -> bool:
    """A running ticket while its claim is the same task; a queued one while its key lives."""
    if ticket.status == "running":
        return found is not None and json.loads(found)["task_id"] == ticket.task_id
    return bool(found)


def _message(user_id: str, conversation_id: str) -> str:
    return json.dumps({"user_id": user_id, "conversation_id": conversation_id})
