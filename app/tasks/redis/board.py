"""Each user's list of runs in Redis: a hash per user, task id -> the turn as listed.

An entry whose claim or ticket is gone, or whose claim's instance died, is
dropped when the list is read, so a dead instance leaves nothing shown.
Each claim is read through the script that judges its holder, so the
reading touches only keys of the user's own slot (a Redis Cluster's rule).
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.tasks.base import Ticket
from app.tasks.redis.claims import RedisClaims
from app.tasks.redis.client import translate_errors
from app.tasks.redis.liveness import LIVE_CLAIM_LUA
from app.tasks.redis.shared import RedisTaskSpace, listed, ticket_from


class RedisBoard:
    """A turn posted while this instance holds its claim is listed again if Redis loses it."""

    def __init__(self, space: RedisTaskSpace, claims: RedisClaims) -> None:
        self._redis = space.redis
        self._keys = space.keys
        self._where = space.where
        self._claims = claims

    async def post(self, ticket: Ticket) -> None:
        self._claims.shown(ticket)
        with translate_errors(self._where):
            await self._redis.hset(self._keys.board(ticket.user_id), ticket.task_id, listed(ticket))

    async def unpost(self, ticket: Ticket) -> None:
        with translate_errors(self._where):
            await self._redis.hdel(self._keys.board(ticket.user_id), ticket.task_id)

    async def users(self) -> list[str]:
        """Found by `SCAN`, a few keys a call: an admin's occasional look, never a turn's path."""
        keys = self._keys
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", keys.board("\0")).replace("\0", "*")
        with translate_errors(self._where):
            found = {keys.board_user(str(k)) async for k in self._redis.scan_iter(match=pattern)}
        return sorted(found)

    async def posted(self, user_id: str) -> list[Ticket]:
        keys = self._keys
        board = keys.board(user_id)
        with translate_errors(self._where):
            entries = await self._redis.hgetall(board)
            tickets = [ticket_from(user_id, str(k), str(v)) for k, v in entries.items()]
            async with self._redis.pipeline(transaction=False) as pipe:
                for ticket in tickets:
                    if ticket.status == "running":
                        pipe.eval(LIVE_CLAIM_LUA, 1, keys.claim(user_id, ticket.conversation_id))
                    else:
                        pipe.exists(keys.ticket(user_id, ticket.task_id))
                found = await pipe.execute()
            alive = [t for t, f in zip(tickets, found, strict=True) if _alive(t, f)]
            stale = [t.task_id for t in tickets if t not in alive]
            if stale:
                await self._redis.hdel(board, *stale)
        return sorted(alive, key=lambda t: t.started_at)


def _alive(ticket: Ticket, found: Any) -> bool:
    """A running ticket while its live claim is the same task; a queued one while its key lives."""
    if ticket.status == "running":
        return found is not None and json.loads(found)["task_id"] == ticket.task_id
    return bool(found)
