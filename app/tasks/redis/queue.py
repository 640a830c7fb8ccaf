"""The conversation queue in Redis (double texting), shared by every instance.

A queue per conversation is a list of task ids, oldest first; each ticket
stays alive while its waiter keeps its ticket key from expiring
(`shared`), so a waiter on an instance that died leaves the queue on
its own. Taking the claim from the head of the queue is one Lua step, and
so is leaving the queue (a cluster pipeline takes no PUBLISH). A change of
the queue is published on the queue channel, which wakes only queued
turns, never a stop waiting for its run to end.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import cast

from app.tasks.base import Claim, QueueState
from app.tasks.redis.claims import RedisClaims
from app.tasks.redis.client import milliseconds, translate_errors
from app.tasks.redis.liveness import HOLDER_LUA
from app.tasks.redis.shared import RedisTaskSpace, message

# KEYS[1] queue, KEYS[2] claim; ARGV: task id, claim value, TTL in ms, ticket key prefix,
# the instance's life in ms. Tickets ahead whose waiters stopped keeping them are dropped
# on the way to the head (a ticket shares its queue's slot); a claim whose instance died
# is free.
_CLAIM_QUEUED_LUA = (
    HOLDER_LUA
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
if held and not holder_dead(held) then return 'waiting' end
redis.call('SET', KEYS[2], with_deadline(ARGV[2], ARGV[5]), 'PX', ARGV[3])
redis.call('LPOP', KEYS[1])
redis.call('DEL', ARGV[4] .. ARGV[1])
return 'claimed'
"""
)

# KEYS[1] ticket, KEYS[2] queue; ARGV: task id, queue channel, message.
_LEAVE_QUEUE_LUA = """
redis.call('DEL', KEYS[1])
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
"""


class RedisQueue:
    """A claim taken from the queue is handed to `claims`, whose heartbeat keeps it."""

    def __init__(self, space: RedisTaskSpace, claims: RedisClaims) -> None:
        self._space = space
        self._redis = space.redis
        self._keys = space.keys
        self._where = space.where
        self._claims = claims
        self._claim_queued_script = space.redis.register_script(_CLAIM_QUEUED_LUA)

    async def join_queue(self, claim: Claim, ttl: float) -> int:
        async with self._redis.pipeline(transaction=True) as pipe:
            ticket = self._keys.ticket(claim.user_id, claim.task_id)
            pipe.set(ticket, "1", px=milliseconds(ttl))
            pipe.rpush(self._keys.queue(claim.user_id, claim.conversation_id), claim.task_id)
            with translate_errors(self._where):
                _, position = await pipe.execute()
        return int(position)

    async def keep_queued(self, claim: Claim, ttl: float) -> bool:
        with translate_errors(self._where):
            return bool(
                await self._redis.pexpire(
                    self._keys.ticket(claim.user_id, claim.task_id), milliseconds(ttl)
                )
            )

    async def claim_queued(self, claim: Claim, ttl: float) -> QueueState:
        keys = self._keys
        names = [
            keys.queue(claim.user_id, claim.conversation_id),
            keys.claim(claim.user_id, claim.conversation_id),
        ]
        args: list[str | int] = [
            claim.task_id,
            keys.claim_value(claim),
            milliseconds(ttl),
            keys.ticket(claim.user_id, ""),
            self._claims.life,
        ]
        with translate_errors(self._where):
            state = await self._claim_queued_script(keys=names, args=args)
        if state == "claimed":
            self._claims.adopt(claim, ttl)
        return cast(QueueState, state)

    async def leave_queue(self, claim: Claim) -> None:
        keys = self._keys
        ticket = keys.ticket(claim.user_id, claim.task_id)
        queue = keys.queue(claim.user_id, claim.conversation_id)
        changed = message(claim.user_id, claim.conversation_id)
        with translate_errors(self._where):
            await self._redis.eval(
                _LEAVE_QUEUE_LUA, 2, ticket, queue, claim.task_id, keys.queue_channel, changed
            )

    async def clear_queue(self, user_id: str, conversation_id: str) -> int:
        queue = self._keys.queue(user_id, conversation_id)
        with translate_errors(self._where):
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.lrange(queue, 0, -1)
                pipe.delete(queue)
                tickets, _ = await pipe.execute()
            if tickets:
                await self._redis.delete(*(self._keys.ticket(user_id, t) for t in tickets))
            await self._redis.publish(self._keys.queue_channel, message(user_id, conversation_id))
        return len(tickets)

    async def wait_released(self, user_id: str, conversation_id: str, wait: float) -> None:
        wakeups = self._space.wakeups
        key = (user_id, conversation_id)
        with wakeups.waiting(wakeups.changed, key) as changed, suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await changed
