"""What the Redis task roles share: one connection, one batching pipeline, one key scheme.

    <prefix>task:<user>:<conversation>   the claim: {task_id, agent_type, instance, until}
    <prefix>queue:<user>:<conversation>  the conversation's queue: task ids, oldest first
    <prefix>queued:<task_id>             a queued turn's ticket, alive while its waiter keeps it
    <prefix>board:<user>                 the user's list of runs: task id -> the turn as listed
    <prefix>run:<user>:<conversation>    the conversation's latest run's task id (`log`)
    <prefix>events:<task_id>             the run's log, a Stream (`log`)
    <prefix>instances                    each instance's deadline (`liveness`)

In a Redis Cluster the user is a hash tag, `{<user>}`, and a ticket and a
run's log name their user (`<prefix>queued:{<user>}:<task_id>`,
`<prefix>events:{<user>}:<task_id>`): a claim, its list of runs, its queue
and the queue's tickets, a run's log and its pointer are read and written
together in one script or transaction, which a cluster allows only within
one slot. One tag per user (never one for the whole prefix) spreads the
users over the nodes. A single server keeps the names without tags
(`RedisTarget.keys_tagged`).

Channels: `<prefix>stop` (a stop for a conversation's owner), `<prefix>done`
(a claim released), `<prefix>queue` (a queue changed: a ticket left, a stop
cleared it). They are ordinary channels in a Cluster too, which hands a
message published on any node to the subscribers of every node; sharded
channels would not serve: `done` is published by the script that deletes
the claim, in the same step, and a script may publish on a sharded channel
only of its own slot, while every instance listens to every message.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from app.tasks.base import Claim, Ticket
from app.tasks.redis.batch import SharedPipeline
from app.tasks.redis.client import RedisClient, connect
from app.tasks.redis.target import RedisTarget


@dataclass(frozen=True, slots=True)
class TaskKeys:
    prefix: str
    instance_id: str
    tagged: bool = False
    """Whether a user's keys carry the hash tag `{<user>}` (a Redis Cluster)."""

    @property
    def stop_channel(self) -> str:
        return f"{self.prefix}stop"

    @property
    def done_channel(self) -> str:
        return f"{self.prefix}done"

    @property
    def queue_channel(self) -> str:
        return f"{self.prefix}queue"

    @property
    def instances(self) -> str:
        return f"{self.prefix}instances"

    def claim(self, user_id: str, conversation_id: str) -> str:
        return f"{self.prefix}task:{self._user(user_id)}:{conversation_id}"

    def queue(self, user_id: str, conversation_id: str) -> str:
        return f"{self.prefix}queue:{self._user(user_id)}:{conversation_id}"

    def ticket(self, user_id: str, task_id: str) -> str:
        if self.tagged:
            return f"{self.prefix}queued:{self._user(user_id)}:{task_id}"
        return f"{self.prefix}queued:{task_id}"

    def board(self, user_id: str) -> str:
        return f"{self.prefix}board:{self._user(user_id)}"

    def board_user(self, key: str) -> str:
        """Whose list of runs `key` is (the inverse of `board`)."""
        user = key.removeprefix(f"{self.prefix}board:")
        return user[1:-1] if self.tagged else user

    def latest_run(self, user_id: str, conversation_id: str) -> str:
        return f"{self.prefix}run:{self._user(user_id)}:{conversation_id}"

    def events(self, user_id: str, task_id: str) -> str:
        if self.tagged:
            return f"{self.prefix}events:{self._user(user_id)}:{task_id}"
        return f"{self.prefix}events:{task_id}"

    def claim_value(self, claim: Claim) -> str:
        """What the claim key holds: the instance names who runs the conversation."""
        return json.dumps(
            {"task_id": claim.task_id, "agent_type": claim.agent_type, "instance": self.instance_id}
        )

    def _user(self, user_id: str) -> str:
        return f"{{{user_id}}}" if self.tagged else user_id


ConversationPair = tuple[str, str]


class Wakeups:
    """Local calls waiting on a conversation: for its claim to end, or its queue to change.

    The listener (`redis.py`) wakes them from the done and queue messages; a
    claim's end wakes both kinds, a queue change only the queued turns, never
    a stop waiting for its run to end.
    """

    def __init__(self) -> None:
        self.ended: dict[ConversationPair, set[asyncio.Future[None]]] = {}
        self.changed: dict[ConversationPair, set[asyncio.Future[None]]] = {}

    @contextmanager
    def waiting(
        self, table: dict[ConversationPair, set[asyncio.Future[None]]], key: ConversationPair
    ) -> Iterator[asyncio.Future[None]]:
        """A future resolved on the next wake-up of `key`, registered from now until exit."""
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = table.setdefault(key, set())
        waiters.add(woken)
        try:
            yield woken
        finally:
            waiters.discard(woken)
            if not waiters:
                del table[key]

    def claim_ended(self, key: ConversationPair) -> None:
        _resolve_all(self.ended.get(key, ()))
        _resolve_all(self.changed.get(key, ()))

    def queue_changed(self, key: ConversationPair) -> None:
        _resolve_all(self.changed.get(key, ()))


def _resolve_all(waiters: Iterable[asyncio.Future[None]]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)


class RedisTaskSpace:
    """The connection, the batch, the keys and the local waiters.

    The backend (`redis.py`) owns them and `close()`s them once.

    `timeout` bounds each connect and each command: it is how long a request
    may hang on a Redis that stopped answering before it gets a 503.
    """

    def __init__(
        self, target: RedisTarget | str, prefix: str, instance_id: str, timeout: float
    ) -> None:
        target = RedisTarget.of(target)
        self.redis: RedisClient = connect(target, timeout=timeout, read_timeout=timeout)
        self.batch = SharedPipeline(target, timeout=timeout)
        self.where = target.where
        self.keys = TaskKeys(prefix, instance_id, target.keys_tagged)
        self.wakeups = Wakeups()

    async def close(self) -> None:
        await self.batch.close()
        await self.redis.aclose()


def listed(ticket: Ticket) -> str:
    """The turn as its user's list of runs holds it (`ticket_from` reads it back)."""
    return json.dumps(
        {
            "conversation_id": ticket.conversation_id,
            "agent_type": ticket.agent_type,
            "question": ticket.question,
            "started_at": ticket.started_at.isoformat(),
            "status": ticket.status,
        }
    )


def ticket_from(user_id: str, task_id: str, raw: str) -> Ticket:
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


def message(user_id: str, conversation_id: str) -> str:
    """A stop, done or queue message: which conversation it is about."""
    return json.dumps({"user_id": user_id, "conversation_id": conversation_id})
