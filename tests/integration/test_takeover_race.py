"""A dead instance's turn is carried on or interrupted, never both, however the steps interleave.

Under load the sweeps of two live instances overlap (the lead lasts one beat,
a sweep may last longer), and a new turn may read a turn left `running`. Each
test drives the steps in the one order that used to go wrong, with events
rather than timing: the sweepers, claims and rows are the service's own, on a
real Redis (and a Redis Cluster) and database; only the successor is the test's, a takeover held
between its two steps (its claim in Redis, then its row), where a slow one
would be. The instance that dies resigns, as a drained one does, so it is
dead at once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from app.agents.memory import load_memory
from app.llm.tokens import TokenCounter
from app.store.db import Database
from app.store.models import StoredTurn
from app.store.turns import SqlTurnStore
from app.tasks import Claim, Tasks
from app.tasks.base import DeadInstances, TakeOvers
from app.tasks.redis.backend import redis_tasks
from app.tasks.redis.client import connect
from app.tasks.redis.target import RedisTarget
from app.tasks.sweeper import Succession, Sweeper
from tests.integration.test_task_managers import redis_target

pytestmark = [pytest.mark.redis]

TTL = 30.0
DEAD, A, B = "dead-1", "alive-a", "alive-b"


class HeldTakeover:
    """A's successor: takes each turn over in the two steps the service's does (the claim,
    then the row), held between them until `go_on` is set."""

    def __init__(self, takeovers: TakeOvers, store: SqlTurnStore) -> None:
        self._takeovers = takeovers
        self._store = store
        self.claimed = asyncio.Event()
        self.go_on = asyncio.Event()
        self.taken: list[StoredTurn] = []

    async def carry_on(self, instance: str) -> Succession:
        for row in await self._store.running_turns(instance):
            assert row.id is not None
            claim = await self._takeovers.take_over(
                row.user_id, row.session_id, row.agent_type, instance, TTL
            )
            if claim is None:
                continue
            self.claimed.set()
            await self.go_on.wait()
            taken = await self._store.take_over(row.id, instance, row.takeovers)
            if taken is not None:
                self.taken.append(taken)
        return Succession(len(self.taken))


@pytest.fixture(params=["redis", "redis-cluster"])
def target(request: pytest.FixtureRequest) -> RedisTarget | str:
    """The shared Redis, then the run's Cluster."""
    return redis_target(request)


@asynccontextmanager
async def instance(target: RedisTarget | str, prefix: str, name: str) -> AsyncIterator[Tasks]:
    tasks = redis_tasks(target, prefix, name)

    async def no_run(user_id: str, conversation_id: str) -> bool:
        return False

    await tasks.backend.start(no_run)
    try:
        yield tasks
    finally:
        await tasks.backend.close()


def roles(tasks: Tasks) -> tuple[DeadInstances, TakeOvers]:
    assert tasks.instances is not None
    assert tasks.takeovers is not None
    return tasks.instances, tasks.takeovers


async def died_running(
    db: Database, target: RedisTarget | str, prefix: str, user: str = "alice"
) -> tuple[int, Claim]:
    """A turn left `running` by an instance that held its conversation and is gone."""
    claim = Claim(user, "conv-1", uuid.uuid4().hex, "chat")
    async with instance(target, prefix, DEAD) as dead:
        turn_id = await SqlTurnStore(db, DEAD).add_question(
            StoredTurn(session_id="conv-1", user_id=user, agent_type="chat", question="Hi")
        )
        assert await dead.claims.claim(claim, TTL)
        await roles(dead)[1].resign()
    return turn_id, claim


async def test_a_sweep_overlapping_a_takeover_leaves_the_turn_to_it(
    db: Database, target: RedisTarget | str, redis_prefix: str
) -> None:
    turn_id, claim = await died_running(db, target, redis_prefix)
    a_store, b_store = SqlTurnStore(db, A), SqlTurnStore(db, B)
    raw = connect(target, timeout=2.0, read_timeout=2.0)
    async with (
        instance(target, redis_prefix, A) as a,
        instance(target, redis_prefix, B) as b,
    ):
        held = HeldTakeover(roles(a)[1], a_store)
        a_sweep = asyncio.create_task(
            Sweeper(roles(a)[0], a_store, ttl=TTL, successor=held).sweep()
        )
        await held.claimed.wait()
        # A's sweep outlasts its lead, as one under load does: B leads the next one.
        await raw.delete(f"{redis_prefix}sweeper")
        b_marked = await Sweeper(roles(b)[0], b_store, ttl=TTL).sweep()
        held.go_on.set()
        a_marked = await a_sweep
        current = await a.claims.current("alice", "conv-1")
        [stored] = await a_store.get_conversation("alice", "conv-1")
    await raw.aclose()

    assert (b_marked, a_marked) == (0, 0)
    assert [t.id for t in held.taken] == [turn_id]
    assert (stored.status, stored.instance_id, stored.takeovers) == ("running", A, 1)
    # A still holds the conversation for the run, under its own task id.
    assert current == claim


async def test_a_sweep_that_gave_the_turn_up_first_wins_over_a_takeover(
    db: Database, target: RedisTarget | str, redis_prefix: str
) -> None:
    turn_id, _ = await died_running(db, target, redis_prefix)
    b_store = SqlTurnStore(db, B)
    async with (
        instance(target, redis_prefix, A) as a,
        instance(target, redis_prefix, B) as b,
    ):
        b_marked = await Sweeper(roles(b)[0], b_store, ttl=TTL).sweep()
        claimed = await roles(a)[1].take_over("alice", "conv-1", "chat", DEAD, TTL)
        taken = await SqlTurnStore(db, A).take_over(turn_id, DEAD, 0)
        current = await a.claims.current("alice", "conv-1")
    [stored] = await b_store.get_conversation("alice", "conv-1")

    assert b_marked == 1
    assert (claimed, taken) == (None, None)
    assert current is None  # free for the user's next message
    assert (stored.id, stored.status, stored.instance_id) == (turn_id, "interrupted", DEAD)


async def test_a_new_turns_memory_marks_the_turn_left_running_not_itself(
    db: Database, target: RedisTarget | str, redis_prefix: str
) -> None:
    earlier_id, _ = await died_running(db, target, redis_prefix)
    a_store, b_store = SqlTurnStore(db, A), SqlTurnStore(db, B)
    asked = StoredTurn(session_id="conv-1", user_id="alice", agent_type="chat", question="Again")
    turn_id, earlier = await a_store.begin_turn(asked, memory_turns=5)
    await load_memory(a_store, TokenCounter(), earlier, 1000)
    # A dies (or drains) in its turn: B carries it on, as it would any.
    taken = await b_store.take_over(turn_id, A, 0)
    [before, after] = await a_store.get_conversation("alice", "conv-1")

    assert [t.id for t in earlier] == [earlier_id]
    assert (before.status, after.status) == ("interrupted", "running")
    assert taken is not None
    assert (after.id, after.instance_id) == (turn_id, B)


async def test_a_turn_whose_conversation_a_new_turn_took_ends_once_that_one_lets_go(
    db: Database, target: RedisTarget | str, redis_prefix: str
) -> None:
    turn_id, _ = await died_running(db, target, redis_prefix)
    b_store = SqlTurnStore(db, B)
    raw = connect(target, timeout=2.0, read_timeout=2.0)
    async with (
        instance(target, redis_prefix, A) as a,
        instance(target, redis_prefix, B) as b,
    ):
        # The user asks again (on another branch, say) before any sweep: A runs that turn.
        asked_again = Claim("alice", "conv-1", uuid.uuid4().hex, "chat")
        assert await a.claims.claim(asked_again, TTL)
        sweeper = Sweeper(roles(b)[0], b_store, ttl=TTL)
        while_held = await sweeper.sweep()
        [left] = await b_store.get_conversation("alice", "conv-1")
        await a.claims.release(asked_again)
        await raw.delete(f"{redis_prefix}sweeper")  # the next beat's sweep
        once_free = await sweeper.sweep()
    await raw.aclose()
    [ended] = await b_store.get_conversation("alice", "conv-1")

    assert (while_held, left.status) == (0, "running")
    assert (once_free, ended.id, ended.status) == (1, turn_id, "interrupted")
