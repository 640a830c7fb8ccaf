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

Claims outlive Redis restarts and their owner's death (`redis_liveness`):
every `dead_after / 5` seconds the instance heartbeat pushes this
instance's deadline out and then, in one more round trip, extends each
claim it holds, or takes it again when Redis lost it (and this instance's
entry with it); a reconnect of the listener beats at once, so a restarted
Redis has its claims back within two round trips of the reconnect. A
claim whose instance is past its deadline counts as free: a new turn takes
it, a stop finds nothing, the list of runs drops it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from redis.asyncio.client import Pipeline
from redis.exceptions import RedisError

from app.core.run import ConversationKey
from app.tasks.base import Claim, QueueState, StopHandler, TaskBackendUnavailable, Ticket
from app.tasks.redis_batch import SharedPipeline
from app.tasks.redis_client import connect, milliseconds, redacted, translate_errors
from app.tasks.redis_liveness import (
    BEAT_LUA,
    CLAIM_LUA,
    FREE_LUA,
    KEEP_LUA,
    LIVE_CLAIM_LUA,
    SWEEP_LUA,
    holder_alive,
)

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


# KEYS[1] queue, KEYS[2] claim, KEYS[3] instances; ARGV: task id, claim value, TTL in ms,
# ticket key prefix. Tickets ahead whose waiters stopped keeping them are dropped on the
# way to the head; a claim whose instance died is free.
_CLAIM_QUEUED_LUA = (
    LIVE_CLAIM_LUA.partition("-- KEYS")[0]
    + """
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
local held = redis.call('GET', KEYS[2])
if held and not holder_dead(held, KEYS[3]) then return 'waiting' end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('LPOP', KEYS[1])
redis.call('DEL', ARGV[4] .. ARGV[1])
return 'claimed'
"""
)


@dataclass(slots=True)
class _Held:
    """A claim this instance holds, as the heartbeat keeps it (or takes it again)."""

    claim: Claim
    ttl: float
    listed: str = ""
    """The turn as its user's list of runs shows it, once known; put back with the claim."""


class RedisTaskManager:
    """Build it, `start()` it once, `close()` it at shutdown (closing is idempotent).

    `timeout` bounds each connect and each command: it is how long a request
    may hang on a Redis that stopped answering before it gets a 503.
    `dead_after` is how long past its last heartbeat this instance counts as
    dead to the others (`INSTANCE_DEAD_SECONDS`); it beats five times in that span.
    """

    def __init__(
        self,
        url: str,
        prefix: str,
        instance_id: str,
        *,
        timeout: float = 2.0,
        dead_after: float = 15.0,
    ) -> None:
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
        self._instances_key = f"{prefix}instances"
        self._dead_after = dead_after
        self._held: dict[ConversationKey, _Held] = {}
        self._beater: asyncio.Task[None] | None = None
        self._beat_now = asyncio.Event()
        """Set to beat before the interval is up: the listener reconnected (Redis came back)."""
        self._first_beat = asyncio.Event()
        self._retake = False
        """Redis lost this instance, and its claims are not all taken again yet."""

    @property
    def instance_id(self) -> str:
        return self._instance_id

    @property
    def beat_interval(self) -> float:
        return self._dead_after / 5

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
        self._beater = asyncio.create_task(
            self._heartbeat(), name=f"instance-heartbeat-{self._instance_id}"
        )
        await self._first_attempt.wait()
        await self._first_beat.wait()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        running = (self._listener, self._beater, *self._stops_in_flight)
        pending = [task for task in running if task is not None]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self._batch.close()
        await self._redis.aclose()

    async def claim(self, claim: Claim, ttl: float, ticket: Ticket | None = None) -> bool:
        key = self._key(claim.user_id, claim.conversation_id)
        value, expiry = self._claim_value(claim), milliseconds(ttl)
        board, listed = self._board_key(claim.user_id), "" if ticket is None else _listed(ticket)
        keys, args = (key, board, self._instances_key), (value, expiry, claim.task_id, listed)
        with translate_errors(self._where):
            taken = bool(
                await self._batch.command(lambda pipe: pipe.eval(CLAIM_LUA, 3, *keys, *args))
            )
        if taken:
            self._held[claim.key] = _Held(claim, ttl, listed)
        return taken

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
        held = self._held.get(claim.key)
        if held is not None and held.claim.task_id == claim.task_id:
            del self._held[claim.key]
        key = self._key(claim.user_id, claim.conversation_id)
        done = _message(claim.user_id, claim.conversation_id)
        board = self._board_key(claim.user_id)
        pipe.eval(_RELEASE_LUA, 2, key, board, claim.task_id, self._done_channel, done)

    async def current(self, user_id: str, conversation_id: str) -> Claim | None:
        """The claim, unless its instance died: that conversation runs nothing."""
        value = await self._live_claim(user_id, conversation_id)
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
            if await self._live_claim(user_id, conversation_id) is None:
                return False
            with translate_errors(self._where):
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
        keys.append(self._instances_key)
        args: list[str | int] = [
            claim.task_id,
            self._claim_value(claim),
            milliseconds(ttl),
            self._ticket_key(""),
        ]
        with translate_errors(self._where):
            state = await self._claim_queued_script(keys=keys, args=args)
        if state == "claimed":
            self._held[claim.key] = _Held(claim, ttl)
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
        held = self._held.get(ConversationKey(ticket.user_id, ticket.conversation_id))
        if held is not None and held.claim.task_id == ticket.task_id:
            held.listed = _listed(ticket)
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
                pipe.hgetall(self._instances_key)
                pipe.time()
                for ticket in tickets:
                    if ticket.status == "running":
                        pipe.get(self._key(user_id, ticket.conversation_id))
                    else:
                        pipe.exists(self._ticket_key(ticket.task_id))
                deadlines, (seconds, micros), *found = await pipe.execute()
            now_ms = seconds * 1000 + micros // 1000
            alive = [
                t
                for t, f in zip(tickets, found, strict=True)
                if _alive(t, f) and (t.status == "queued" or holder_alive(f, deadlines, now_ms))
            ]
            stale = [t.task_id for t in tickets if t not in alive]
            if stale:
                await self._redis.hdel(board, *stale)
        return sorted(alive, key=lambda t: t.started_at)

    async def lead_sweep(self, interval: float) -> bool:
        """Whether this instance sweeps for dead instances now: one at a time, each `interval`."""
        with translate_errors(self._where):
            return bool(
                await self._redis.set(
                    f"{self._prefix}sweeper", self._instance_id, nx=True, px=milliseconds(interval)
                )
            )

    async def dead_instances(self, holding: set[str], kept: float) -> list[str]:
        """The instances past their deadline, other than this one (see `redis_liveness`).

        `holding` are instances with turns stored `running`; `kept` is how long a
        dead one is still reported (its claims live that long at most).
        """
        grace = milliseconds(self._dead_after)
        with translate_errors(self._where):
            dead = await self._redis.eval(
                SWEEP_LUA, 1, self._instances_key, grace, milliseconds(kept), *sorted(holding)
            )
        return [str(instance) for instance in dead if instance != self._instance_id]

    async def free(self, instance: str, conversations: Iterable[tuple[str, str]]) -> None:
        """Drop the dead `instance`'s claims on `conversations`, waking whoever waits on them."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for user_id, conversation_id in conversations:
                key, done = self._key(user_id, conversation_id), _message(user_id, conversation_id)
                pipe.eval(FREE_LUA, 1, key, instance, self._done_channel, done)
            with translate_errors(self._where):
                await pipe.execute()

    async def _live_claim(self, user_id: str, conversation_id: str) -> str | None:
        key = self._key(user_id, conversation_id)
        with translate_errors(self._where):
            value = await self._batch.command(
                lambda pipe: pipe.eval(LIVE_CLAIM_LUA, 2, key, self._instances_key)
            )
        return None if value is None else str(value)

    async def _heartbeat(self) -> None:
        """Beat every `beat_interval`, or at once when asked; log once per outage."""
        failing = False
        while True:
            try:
                await self._beat()
                if failing:
                    logger.info("instance heartbeat reaches Redis at %s again", self._where)
                failing = False
            except TaskBackendUnavailable as exc:
                if not failing:
                    logger.warning(
                        "instance heartbeat cannot reach Redis (%s): past %.0f s without one"
                        " the other instances take this one's conversations",
                        exc,
                        self._dead_after,
                    )
                failing = True
            self._first_beat.set()
            self._beat_now.clear()
            with suppress(TimeoutError):
                async with asyncio.timeout(self.beat_interval):
                    await self._beat_now.wait()

    async def _beat(self) -> None:
        """Push this instance's deadline out, then keep every claim it holds.

        A claim gone while this instance's entry stayed expired (its run stopped
        refreshing it); one gone with the entry was lost by Redis, and is taken
        again. The claims are read when the batch leaves: one released meanwhile
        is not in it, and one released while the batch was on its way and taken
        again is released at once.
        """
        life = milliseconds(self._dead_after)
        with translate_errors(self._where):
            lost = bool(
                await self._batch.command(
                    lambda pipe: pipe.eval(
                        BEAT_LUA, 1, self._instances_key, self._instance_id, life
                    )
                )
            )
        self._retake = self._retake or lost
        if not self._held:
            self._retake = False
            return
        kept: list[_Held] = []
        retake = "1" if self._retake else "0"

        def fill(pipe: Pipeline) -> None:
            kept.extend(self._held.values())
            for held in kept:
                claim = held.claim
                key = self._key(claim.user_id, claim.conversation_id)
                board, value = self._board_key(claim.user_id), self._claim_value(claim)
                expiry = milliseconds(held.ttl)
                pipe.eval(
                    KEEP_LUA, 2, key, board, claim.task_id, value, expiry, held.listed, retake
                )

        with translate_errors(self._where):
            replies = await self._batch.execute(fill)
        self._retake = False
        again = 0
        for held, reply in zip(kept, replies, strict=True):
            claim = held.claim
            current = self._held.get(claim.key) is held
            if reply == 2:
                again += 1
                if not current:
                    await self.release(claim)
            elif reply in (0, 3) and current:
                del self._held[claim.key]  # its run's own refresh takes it again if it can
        if again:
            logger.info(
                "Redis at %s had lost this instance (restarted?): %d claim(s) taken again",
                self._where,
                again,
            )

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
                        self._beat_now.set()  # Redis may have restarted empty: claims back now
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
