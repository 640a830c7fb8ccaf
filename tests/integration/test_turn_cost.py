"""What one turn costs the database and Redis, counted, so a gain in the floor cannot slip back.

A turn is stored in two statements on PostgreSQL (the question with the
memory read beside it, then the answer) and three on SQLite (there the read
is its own statement, after the question's; a first question has no path
above it to read, so it costs two). Two reads come before: the conversation's
project (a request that names its conversation; docs/integrate/memory-and-projects.md)
and the user's memory items (with `MEMORY_ENABLED`). The SQL count is the
app's own `Database.statements`, which sees both SQLAlchemy's statements and
the driver's; the server's own view of each connection's last statement
shows that a statement is not followed by a reset query of the pool's. Redis
commands are counted by a private redis-server
(`INFO commandstats`), so nothing but this app's commands is in the count.

The run's log is copied to Redis in batches as its events come (the copier
lingers 20 ms after a wake-up for more), so how many batches a turn takes
depends on timing; what a turn costs beside them, and what each batch
costs, do not. The count holds each of the two to its own figure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis
from fastapi import FastAPI
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import create_async_engine

from app.factory import create_app
from app.store.fast_path import verb
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import ask, service_settings
from tests.support.processes import RedisServer
from tests.support.server import serve

TURNS = 6
"""Three conversations of two turns: the second turn of each has memory to read."""
REDIS_PER_TURN = {
    # Scripts go as EVAL: batched with other turns' commands in one pipeline (SharedPipeline).
    "eval": 1,  # the claim's (the log's batches are scripts too: `LOG_BATCH`)
    "hset": 1,  # posting the turn to the list of runs (below)
    # The claim (a script that also lists the turn), and the run's pointer set by the
    # log's first batch and by its last.
    "set": 3,
    # The claim holds its instance's deadline, on Redis's clock (`redis.liveness`).
    "time": 1,
    # The release, inside the log's last batch: the claim deleted, its notice published,
    # and the turn taken off the caller's list of runs (GET /agent/runs), where the
    # claim's script listed it.
    "del": 1,
    "publish": 1,
    "hdel": 1,
}
"""Redis commands one turn runs beside its log's batches, scripts' inner commands included
(`INFO commandstats`)."""
LOG_BATCH = Counter({"eval": 1, "get": 1})
"""Each batch of the log's copy: one script, which first reads the claim, so a run that lost
its claim to another instance writes nothing more (`APPEND_LUA`)."""
LOG_COPY = ("xadd", "pexpire")
"""At most one of each a batch (these turns' batches hold fewer than `_ENTRY_EVENTS` events),
and at least one a turn, in its last batch: the entry with the end marker, and the Stream's
TTL set to its retention."""
BUCKET = Counter({"eval": 1, "time": 1, "hmget": 1, "hset": 1, "expire": 1})
"""Taking a new-stream token (a script): what a turn adds with `STREAMS_PER_MINUTE` on."""
SLOT = Counter({"zremrangebyscore": 1, "zcard": 1, "zadd": 1, "expire": 1, "zrem": 1})
"""Taking a stream slot, in the token's script, and freeing it: `MAX_STREAMS_PER_USER` on."""


@contextmanager
def turns_statements(app: FastAPI) -> Iterator[Counter[str]]:
    """The statements the app's turns execute in the block, by verb: the schedule clock's
    own reads are left out, since on a slow machine its first pass may land in the block."""
    database = app.state.database
    before = database.statements.copy()
    clock: Counter[str] = Counter()

    def count_clock(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "FROM schedule" in statement:
            clock[verb(statement)] += 1

    event.listen(database.engine.sync_engine, "before_cursor_execute", count_clock)
    counted: Counter[str] = Counter()
    try:
        yield counted
    finally:
        event.remove(database.engine.sync_engine, "before_cursor_execute", count_clock)
    counted.update(database.statements - before - clock)


async def redis_commands(url: str) -> Counter[str]:
    """Commands the server ran since its last reset, less the ones asking it."""
    client = redis.from_url(url)
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    counts = Counter({name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()})
    for ours in ("info", "config|resetstat", "hello"):  # this test's, and handshakes
        counts.pop(ours, None)
    return +counts


async def reset_redis_stats(url: str) -> None:
    client = redis.from_url(url)
    try:
        await client.config_resetstat()
    finally:
        await client.aclose()


async def last_queries(database_url: str) -> list[str]:
    """Each other connection's last statement, as the PostgreSQL server saw it."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                text(
                    "SELECT query FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
            return [str(query) for (query,) in rows]
    finally:
        await engine.dispose()


async def run_turns(client: httpx.AsyncClient) -> None:
    for conversation in ("c1", "c2", "c3"):
        for question in ("What is SSE?", "And why?"):
            events = await ask(client, question, conversation)
            assert events[-1]["status"] == "completed"


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("max_streams", "per_minute", "limits"),
    [
        (8, 30, BUCKET + SLOT),
        (0, 30, BUCKET),
        (0, 0, Counter()),  # no limit costs nothing: not even a round trip
    ],
    ids=["both-limits", "streams-a-minute-only", "no-limits"],
)
async def test_a_turn_costs_two_writes_one_read_and_a_fixed_few_redis_commands(
    max_streams: int,
    per_minute: int,
    limits: Counter[str],
    postgres_url: str,
    redis_server: RedisServer,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
) -> None:
    settings = service_settings(
        tmp_path,
        postgres_url,
        redis_server.url,
        llm_base_url=fake_llm.base_url,
        max_streams_per_user=max_streams,
        streams_per_minute=per_minute,
        # The instance heartbeat and the sweep run at start-up, then not again in the
        # count's few seconds: what is counted is the turns' own commands.
        instance_dead_seconds=600,
    )
    app = create_app(settings)
    async with serve(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        await ask(client, "Warm up", "c0")
        await reset_redis_stats(redis_server.url)
        with turns_statements(app) as statements:
            await run_turns(client)
        commands = await redis_commands(redis_server.url)
        queries = await last_queries(postgres_url)

    reads = Counter({"SELECT": TURNS})  # the conversation's project with the user's memory
    assert statements == Counter({"WITH": TURNS, "UPDATE": TURNS}) + reads
    # Each is one round trip: the connections that stored the answers ended on that
    # statement, not on a reset query the pool sends after it (asyncpg's default).
    assert any(query.startswith("UPDATE ai_session SET answer=") for query in queries), queries
    assert not [query for query in queries if "RESET ALL" in query], queries
    per_turn = Counter(REDIS_PER_TURN) + limits
    fixed = Counter({name: n * TURNS for name, n in per_turn.items()})
    # How many batches the log took depends on timing: at least one a turn, its last.
    batches = commands["eval"] - fixed["eval"]
    assert batches >= TURNS, commands
    copies = {name: commands.pop(name) for name in LOG_COPY}
    assert all(TURNS <= n <= batches for n in copies.values()), (copies, batches)
    assert commands == fixed + Counter({name: n * batches for name, n in LOG_BATCH.items()})


async def test_an_embedded_turn_costs_its_writes_its_path_and_one_read(
    sqlite_url: str, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = service_settings(tmp_path, sqlite_url, llm_base_url=fake_llm.base_url)
    app = create_app(settings)
    async with serve(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        await ask(client, "Warm up", "c0")
        with turns_statements(app) as statements:
            await run_turns(client)

    # Only the second turn of each conversation has a path above it to read; every turn reads
    # its conversation's project with its user's memory, in one statement.
    reads = TURNS // 2 + TURNS
    assert statements == Counter({"INSERT": TURNS, "SELECT": reads, "UPDATE": TURNS})
