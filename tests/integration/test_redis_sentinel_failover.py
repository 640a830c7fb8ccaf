"""A Redis that fails over, under the service as deployed: two instances (uvicorn) behind
HAProxy on a primary with a replica and three Sentinels (REDIS_SENTINELS), the primary
SIGKILLed while nine turns stream through the load balancer.

The turns never wait on Redis, so they go on through the outage; those that end before
the replica is promoted cannot release their claims or their stream slots then, and
must release them once Redis answers, or their conversations would stay busy and their
users held back for the claims' and the slots' whole lifetimes on the promoted replica.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import (
    BackgroundTurn,
    instance_environment,
    outcome,
    stored_turns,
)
from tests.support.cluster import Cluster
from tests.support.polling import eventually
from tests.support.redis_topologies import SentinelSet
from tests.support.sse import text_of

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

ANSWER = "one two three four five six seven eight nine ten eleven twelve"
USERS = ("alice", "bob", "carol")
KEYS = ",".join(f"key-{user}:{user}" for user in USERS)
TURNS = 9
"""Three for each user, as many as MAX_STREAMS_PER_USER lets each stream at once."""


def as_user(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer key-{user}"}


@pytest.fixture
async def cluster(
    tmp_path: Path,
    postgres_url: str,
    redis_sentinels: SentinelSet,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
) -> AsyncIterator[Cluster]:
    shared = {**redis_sentinels.environment, "REDIS_PREFIX": redis_prefix}
    environment = instance_environment(
        postgres_url, shared, fake_llm, API_KEYS=KEYS, MAX_STREAMS_PER_USER="3"
    )
    pair = Cluster(tmp_path, environment)
    try:
        yield pair
    finally:
        await pair.close()


async def ready(clients: tuple[httpx.AsyncClient, ...]) -> bool:
    """Whether every instance reaches Redis again and hears stops (`/ready`)."""
    answers = await asyncio.gather(*(client.get("/ready") for client in clients))
    return all(answer.status_code == 200 for answer in answers)


async def test_the_primary_killed_under_nine_turns_loses_none_and_stop_and_409_hold_after(
    cluster: Cluster, redis_sentinels: SentinelSet, redis_prefix: str, fake_llm: FakeOpenAI
) -> None:
    # Turns of 1.2 s to 5.2 s: the first ones end while no primary answers, the last ones
    # after the replica took over.
    fake_llm.script(
        *(Reply.text(ANSWER, chunks=12, delay=0.1 + 0.05 * n) for n in range(TURNS)),
        Reply.hang(first_text="Held"),
    )
    balanced = await cluster.start(2)
    direct = {each.name: cluster.direct(each.name) for each in cluster.instances}
    clients = tuple(direct.values())
    turns = {f"c-{n}": USERS[n % 3] for n in range(TURNS)}
    streams = {
        conversation: BackgroundTurn(balanced, conversation, as_user(user))
        for conversation, user in turns.items()
    }
    await asyncio.gather(*(stream.begun() for stream in streams.values()))

    old_primary = await asyncio.to_thread(redis_sentinels.kill_primary)
    seen = {conversation: await stream.task for conversation, stream in streams.items()}
    promoted_after = await redis_sentinels.promoted(old_primary)
    await eventually(lambda: ready(clients), what="both instances on the new primary")

    async def no_stream_slot_held() -> bool:
        """The users' stream slots (`app/limits/redis.py`), as the new primary holds them."""
        async with redis.asyncio.Redis(port=redis_sentinels.primary_port()) as primary:
            held = [await primary.zcard(f"{redis_prefix}limits:streams:{u}") for u in USERS]
        return not any(held)

    await eventually(no_stream_slot_held, what="the slots of the ended turns released")
    stored = {c: await stored_turns(balanced, c, as_user(user)) for c, user in turns.items()}

    # A turn through the balancer; a second question and a stop sent to the other instance.
    held = BackgroundTurn(balanced, "c-held", as_user("carol"))
    await held.begun()
    serving = await cluster.serving()
    (other,) = (client for name, client in direct.items() if name != serving)
    params = {"query": "And another", "conversationId": "c-held"}
    second = await other.get("/agent/chat/stream", params=params, headers=as_user("carol"))
    stopped = await other.get(
        "/agent/stop", params={"conversationId": "c-held"}, headers=as_user("carol")
    )
    held_seen = await held.task
    held_stored = await stored_turns(balanced, "c-held", as_user("carol"))

    # Every conversation is free again, and each user streams three at once again.
    fake_llm.script(*(Reply.text("Again.") for _ in turns))
    answers = [outcome(balanced, c, as_user(user)) for c, user in turns.items()]
    again = dict(zip(turns, await asyncio.gather(*answers), strict=True))

    assert promoted_after < 15
    assert {c: (s[-1]["type"], s[-1]["status"]) for c, s in seen.items()} == dict.fromkeys(
        turns, ("complete", "completed")
    )
    assert {c: text_of(s) for c, s in seen.items()} == dict.fromkeys(turns, ANSWER)
    assert stored == {c: [("completed", ANSWER)] for c in turns}
    assert second.status_code == 409
    assert stopped.json() == {"success": True, "message": "The task was stopped"}
    assert (held_seen[-1]["type"], held_seen[-1]["status"]) == ("complete", "stopped")
    assert held_stored == [("stopped", "Held")]
    assert again == dict.fromkeys(turns, "completed")
