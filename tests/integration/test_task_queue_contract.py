"""The double-texting queue and the list of runs: one contract for both task backends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from app.tasks import Claim
from app.tasks.base import Ticket, TicketStatus
from tests.integration.test_task_managers import (  # noqa: F401 (`backend` is a fixture)
    PROMPTLY,
    SHORT_TTL,
    STOP_WAIT,
    TTL,
    Backend,
    backend,
    new_claim,
)


def ticket(claim: Claim, status: TicketStatus, minutes_ago: int = 0) -> Ticket:
    return Ticket(
        user_id=claim.user_id,
        conversation_id=claim.conversation_id,
        task_id=claim.task_id,
        agent_type=claim.agent_type,
        question=f"question of {claim.task_id[:6]}",
        started_at=datetime.now(UTC) - timedelta(minutes=minutes_ago),
        status=status,
    )


async def test_queued_claims_are_taken_in_order_once_the_conversation_is_free(
    backend: Backend,  # noqa: F811
) -> None:
    tasks = backend.tasks
    running, first, second = new_claim(), new_claim(), new_claim()
    assert await tasks.claims.claim(running, TTL)

    positions = [await tasks.queue.join_queue(c, TTL) for c in (first, second)]
    while_busy = [await tasks.queue.claim_queued(c, TTL) for c in (second, first)]
    await tasks.claims.release(running)
    after_release = [await tasks.queue.claim_queued(c, TTL) for c in (second, first)]
    await tasks.claims.release(first)
    last = await tasks.queue.claim_queued(second, TTL)

    assert positions == [1, 2]
    assert while_busy == ["waiting", "waiting"]
    assert after_release == ["waiting", "claimed"]
    assert last == "claimed"
    assert await tasks.claims.current("alice", "conv-1") == second


async def test_a_cleared_queue_leaves_every_ticket_gone(backend: Backend) -> None:  # noqa: F811
    tasks = backend.tasks
    running, first, second = new_claim(), new_claim(), new_claim()
    other = new_claim(conversation_id="conv-2")
    assert await tasks.claims.claim(running, TTL)
    for claim in (first, second, other):
        await tasks.queue.join_queue(claim, TTL)

    cleared = await tasks.queue.clear_queue("alice", "conv-1")
    await tasks.claims.release(running)

    assert cleared == 2
    assert [await tasks.queue.claim_queued(c, TTL) for c in (first, second)] == ["gone", "gone"]
    assert not await tasks.queue.keep_queued(first, TTL)
    assert await tasks.queue.keep_queued(other, TTL)
    assert await tasks.queue.clear_queue("alice", "conv-1") == 0


async def test_a_ticket_that_leaves_or_lapses_lets_the_next_one_through(
    backend: Backend,  # noqa: F811
) -> None:
    tasks = backend.tasks
    leaving, lapsing, waiting = new_claim(), new_claim(), new_claim()
    await tasks.queue.join_queue(leaving, TTL)
    await tasks.queue.join_queue(lapsing, SHORT_TTL)
    await tasks.queue.join_queue(waiting, TTL)

    await tasks.queue.leave_queue(leaving)
    # A waiter that stops keeping its ticket (its instance died) is passed once it lapses.
    assert await tasks.queue.claim_queued(waiting, TTL) == "waiting"

    async def passed() -> bool:
        return await tasks.queue.claim_queued(waiting, TTL) == "claimed"

    await backend.after(SHORT_TTL, passed)
    assert await tasks.queue.claim_queued(lapsing, TTL) == "gone"
    assert await tasks.queue.claim_queued(leaving, TTL) == "gone"


async def test_a_release_or_a_queue_change_wakes_the_waiters(backend: Backend) -> None:  # noqa: F811
    tasks = backend.tasks
    running, queued = new_claim(), new_claim()
    assert await tasks.claims.claim(running, TTL)
    await tasks.queue.join_queue(queued, TTL)

    async def woken_by(change: Callable[[], Awaitable[None]]) -> float:
        began = time.monotonic()
        waiting = asyncio.create_task(tasks.queue.wait_released("alice", "conv-1", STOP_WAIT))
        await asyncio.sleep(0)  # the waiter is registered before the change
        await change()
        await waiting
        return time.monotonic() - began

    released = await woken_by(lambda: tasks.claims.release(running))
    left = await woken_by(lambda: tasks.queue.leave_queue(queued))

    assert released < PROMPTLY
    assert left < PROMPTLY


async def test_the_list_shows_a_users_live_tickets_only(backend: Backend) -> None:  # noqa: F811
    tasks = backend.tasks
    running, queued, ended = new_claim(), new_claim(), new_claim(conversation_id="conv-2")
    bobs = new_claim(user_id="bob")
    assert await tasks.claims.claim(running, TTL)
    await tasks.queue.join_queue(queued, TTL)
    assert await tasks.claims.claim(bobs, TTL)
    await tasks.board.post(ticket(running, "running", minutes_ago=2))
    await tasks.board.post(ticket(queued, "queued", minutes_ago=1))
    await tasks.board.post(ticket(ended, "running"))
    await tasks.board.post(ticket(bobs, "running"))

    listed = await tasks.board.posted("alice")
    await tasks.claims.release(running)
    await tasks.queue.clear_queue("alice", "conv-1")
    after = await tasks.board.posted("alice")
    await tasks.board.unpost(ticket(bobs, "running"))

    # `ended` never held its claim: a ticket without one is stale, and dropped.
    assert [(t.task_id, t.status) for t in listed] == [
        (running.task_id, "running"),
        (queued.task_id, "queued"),
    ]
    assert listed[0].question == ticket(running, "running").question
    assert after == []
    assert await tasks.board.posted("bob") == []


async def test_a_queue_change_does_not_end_a_stop_waiting_for_its_run(
    backend: Backend,  # noqa: F811
) -> None:
    tasks = backend.tasks
    running, queued = new_claim(), new_claim()
    assert await tasks.claims.claim(running, TTL)
    await tasks.queue.join_queue(queued, TTL)
    # No run here answers the stop: it waits for the claim's release.
    stopping = asyncio.create_task(tasks.claims.request_stop("alice", "conv-1", STOP_WAIT))
    await asyncio.sleep(0)
    watching = asyncio.create_task(tasks.queue.wait_released("alice", "conv-1", STOP_WAIT))
    await asyncio.sleep(0)

    began = time.monotonic()
    await tasks.queue.clear_queue("alice", "conv-1")
    await watching  # the queue's change has reached this instance
    still_waiting = not stopping.done()
    await tasks.claims.release(running)

    assert still_waiting
    assert await stopping is True
    assert time.monotonic() - began < PROMPTLY


async def test_a_claim_with_a_ticket_lists_the_turn_only_when_it_is_taken(
    backend: Backend,  # noqa: F811
) -> None:
    tasks = backend.tasks
    running, refused = new_claim(), new_claim()

    taken = await tasks.claims.claim(running, TTL, ticket(running, "running"))
    busy = await tasks.claims.claim(refused, TTL, ticket(refused, "running"))
    listed = await tasks.board.posted("alice")
    await tasks.claims.release(running)

    assert (taken, busy) == (True, False)
    assert [(t.task_id, t.status) for t in listed] == [(running.task_id, "running")]
    assert listed[0].question == f"question of {running.task_id[:6]}"
    assert await tasks.board.posted("alice") == []
