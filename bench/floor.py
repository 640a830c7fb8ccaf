"""The floor under the service's throughput: what a turn's storage and Redis work cost alone.

    .venv/bin/python -m bench.floor --database-url URL --redis-url URL --prefix P

A turn must store its question before the stream starts and its answer
before `complete`, read the conversation's memory, and hold a claim in Redis
while its log is copied there for other instances. This runs exactly that
work, through the service's own `SqlTurnStore`, Redis claims (`redis_tasks`)
and `RedisRunLogs`, with no HTTP and no model, and prints the CPU it costs per
turn as JSON. Set against the proxy's CPU per turn it says how close to the
proxy's throughput the service can get at all, whatever its own code does
(bench/README.md, "Where the targets are missed").

Each part is timed in a phase of its own, `--turns` turns with
`--concurrency` at once, on this process's CPU clock (`time.process_time`),
so the figure is the client side's work: the servers' CPU is not in it, as
it is not in the service's figure either. The log copy is fed in three bursts
(the opening events, the answer, `complete`), as a real turn's is.

The Redis figure is what Redis adds: the same turns (claim, events appended
to the run's log, the copier started, release) run once on the embedded
defaults (the in-process claims, logs that stay in memory) and once on
Redis, and the report's `redis_cpu_ms` is the difference. Encoding the events
and waking the log's readers happen either way: the service spends that CPU
with or without Redis (about a fifth of the Redis run's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable

from app.core.events import CompleteEvent, StartEvent, TextEvent, ThinkingEvent
from app.store.db import Database
from app.store.models import StoredTurn, TurnOutcome
from app.store.turns import SqlTurnStore
from app.tasks import (
    Claim,
    Claims,
    LocalRunLogs,
    RunLog,
    SharedRunLogs,
    in_process_tasks,
)
from app.tasks.redis.backend import redis_tasks
from app.tasks.redis.log import RedisRunLogs
from bench.procs import fast_event_loop

ANSWER_TOKENS = 20
"""As in the saturation scenario."""
_BURST_GAP_SECONDS = 0.03
"""Wall time between a turn's bursts of events: longer than the copier's linger."""


async def _timed(turns: int, concurrency: int, turn: Callable[[int], Awaitable[None]]) -> float:
    """CPU milliseconds per turn of running `turn(0..turns-1)`, `concurrency` at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def one(number: int) -> None:
        async with gate:
            await turn(number)

    await asyncio.gather(*(one(n) for n in range(min(turns, concurrency))))  # warm the pools
    start = time.process_time()
    await asyncio.gather(*(one(n) for n in range(turns)))
    return (time.process_time() - start) / turns * 1000


async def store_turns(url: str, turns: int, concurrency: int) -> float:
    """A turn's storage: the question stored with the memory read, then the answer written."""
    async with Database.open(url, pool_size=concurrency, migrate=True) as db:
        store = SqlTurnStore(db)
        user = f"floor-{uuid.uuid4().hex[:8]}"

        async def turn(number: int) -> None:
            conversation = f"c{number}"
            row, _ = await store.begin_turn(
                StoredTurn(
                    session_id=conversation, user_id=user, agent_type="chat", question="a question"
                ),
                memory_turns=10,
            )
            answer = " ".join(["token"] * ANSWER_TOKENS)
            await store.finish_turn(
                row, TurnOutcome(answer=answer, thinking="", status="completed")
            )

        return await _timed(turns, concurrency, turn)


async def log_turns(claims: Claims, logs: SharedRunLogs, turns: int, concurrency: int) -> float:
    """A turn's claim and run log: the log copied in three bursts, the last one releasing."""
    user = f"floor-{uuid.uuid4().hex[:8]}"

    async def turn(number: int) -> None:
        claim = Claim(user, f"c{number}", uuid.uuid4().hex, "chat")
        if not await claims.claim(claim, 30):
            raise RuntimeError("the conversation is already claimed")
        log = RunLog()
        copier = asyncio.create_task(logs.publish(claim, log))
        log.append(StartEvent(claim.conversation_id, number, "chat", claim.task_id))
        log.append(ThinkingEvent("no web search"))
        await asyncio.sleep(_BURST_GAP_SECONDS)
        for _ in range(ANSWER_TOKENS):
            log.append(TextEvent("token "))
        await asyncio.sleep(_BURST_GAP_SECONDS)
        # As the runner ends a run: the last copy releases the claim in its round trip.
        log.end(CompleteEvent("completed", 1, 2))
        if not await copier:
            await claims.release(claim)
        log.close()

    return await _timed(turns, concurrency, turn)


async def redis_turns(url: str, prefix: str, turns: int, concurrency: int) -> float:
    """`log_turns` with the claims and the logs' copies in Redis, as several instances run."""
    tasks = redis_tasks(url, prefix, "floor")
    await tasks.backend.start(_no_stop)
    logs = RedisRunLogs(
        url,
        prefix,
        tasks.claims,
        instance_id="floor",
        releaser=tasks.batch_release,
        ttl=30,
        retention=60,
        max_events=10_000,
        max_idle=15,
    )
    try:
        return await log_turns(tasks.claims, logs, turns, concurrency)
    finally:
        await logs.close()
        await tasks.backend.close()


async def in_process_turns(turns: int, concurrency: int) -> float:
    """`log_turns` on the embedded defaults: what the same turn costs with no Redis at all."""
    tasks = in_process_tasks()
    await tasks.backend.start(_no_stop)
    try:
        return await log_turns(tasks.claims, LocalRunLogs(), turns, concurrency)
    finally:
        await tasks.backend.close()


async def _no_stop(user_id: str, conversation_id: str) -> bool:
    return False


async def _main(args: argparse.Namespace) -> None:
    store = await store_turns(args.database_url, args.turns, args.concurrency)
    in_process = await in_process_turns(args.turns, args.concurrency)
    redis = await redis_turns(args.redis_url, args.prefix, args.turns, args.concurrency)
    report = {
        "turns": args.turns,
        "store_cpu_ms": store,
        "redis_cpu_ms": redis - in_process,
        "redis_turn_cpu_ms": redis,
        "in_process_turn_cpu_ms": in_process,
    }
    print(json.dumps(report))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--prefix", required=True, help="Redis keys go under this prefix")
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    fast_event_loop(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
