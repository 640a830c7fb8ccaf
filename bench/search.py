"""What a search of the turns costs at 100,000 stored turns, on PostgreSQL and on SQLite.

    .venv/bin/python -m bench.search [--turns 100000] [--users 4] [--repeat 40]

Stores `--turns` turns spread over a few users in bulk (one multi-row
INSERT per batch, the index filled as the service's writes fill it: the
`pg_trgm` GIN indexes, or the SQLite FTS5 table through its triggers), then
times `SqlTurnSearch.search` (the route's own store call: a page of 10, the
total, the titles) for a few kinds of query, each `--repeat` times across
the users, and prints p50/p99 in ms. PostgreSQL is the bench's private
server (bench/servers.py; `BENCH_POSTGRES_URL` for an existing one), SQLite
a file in a temporary folder. The target: p99 under 100 ms on PostgreSQL.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from app.store.db import Database
from app.store.models import AI_SESSION
from app.store.search import SqlTurnSearch
from bench.procs import fast_event_loop
from bench.servers import postgres

TARGET_P99_MS = 100.0
BATCH = 2_000
TURNS_PER_CONVERSATION = 5
QUERIES = {
    "common word": "database",
    "rare phrase": "needle in the haystack",
    "Chinese": "向量数据库",
    "two characters": "库存",
    "no match": "zebra crossing",
}
"""What is searched: how many turns hold each is set by `_texts` below."""
_WORDS = (
    *("stream", "event", "server", "client", "answer", "model", "token", "index"),
    *("query", "cache", "retry", "timeout", "database", "vector", "search", "result"),
    *("agent", "tool", "memory", "history", "file", "report", "deck", "plan"),
)
_CHINESE = ("我们使用向量数据库存储嵌入", "检索速度很快", "库存管理系统", "这是一个测试回答")


def _texts(rng: random.Random) -> tuple[str, str]:
    """A question and an answer: English words, Chinese phrases in one turn of five, a
    rare phrase in one of a thousand."""
    question = " ".join(rng.choices(_WORDS, k=8)) + "?"
    words = rng.choices(_WORDS, k=60)
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words)), rng.choice(_CHINESE))
    if rng.random() < 0.001:
        words.insert(rng.randrange(len(words)), "a needle in the haystack")
    return question, " ".join(words) + "."


def _rows(turns: int, users: int, seed: int) -> Iterator[list[dict[str, Any]]]:
    rng = random.Random(seed)
    now = datetime.now(UTC)
    batch: list[dict[str, Any]] = []
    # Each conversation one path, as the service writes it: a turn follows the one before
    # (without, each turn would be a version of the first question, and one search hit).
    last: dict[tuple[str, str], int] = {}
    for n in range(turns):
        question, answer = _texts(rng)
        place = (f"c{n // TURNS_PER_CONVERSATION}", f"user-{n % users}")
        batch.append(
            {
                "id": n + 1,
                "parent_id": last.get(place),
                "session_id": place[0],
                "user_id": place[1],
                "agent_type": "chat",
                "question": question,
                "answer": answer,
                "status": "completed",
                "create_time": now,
                "update_time": now,
            }
        )
        last[place] = n + 1
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def _load(db: Database, turns: int, users: int) -> float:
    started = time.perf_counter()
    for batch in _rows(turns, users, seed=7):
        async with db.begin() as conn:
            await conn.execute(insert(AI_SESSION), batch)
    if db.dialect.name == "postgresql":
        # The statistics autovacuum would gather soon after such a load: without them the
        # planner takes the table for empty and picks its plans for that.
        async with db.statement() as conn:
            await conn.execute(text("ANALYZE ai_session"))
    return time.perf_counter() - started


async def measure(url: str, turns: int, users: int, repeat: int) -> dict[str, Any]:
    """Store the turns in the (empty) database at `url`, then time each query."""
    async with Database.open(url, pool_size=2, migrate=True) as db:
        load_seconds = await _load(db, turns, users)
        search = SqlTurnSearch(db)
        figures: dict[str, Any] = {"load_s": round(load_seconds, 1)}
        for name, text in QUERIES.items():
            times: list[float] = []
            totals: set[int] = set()
            for n in range(repeat):
                started = time.perf_counter()
                _, total = await search.search(f"user-{n % users}", text, 1, 10)
                times.append((time.perf_counter() - started) * 1000)
                totals.add(total)
            times.sort()
            figures[name] = {
                "p50_ms": round(statistics.median(times), 1),
                "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))], 1),
                "matches_per_user": max(totals),
            }
        return figures


def _print(backend: str, figures: dict[str, Any]) -> None:
    print(f"\n{backend}: {figures['load_s']} s to store the turns")
    print(f"{'query':<16} {'p50 ms':>8} {'p99 ms':>8} {'matches/user':>13}")
    for name in QUERIES:
        f = figures[name]
        print(f"{name:<16} {f['p50_ms']:>8} {f['p99_ms']:>8} {f['matches_per_user']:>13}")


async def main(turns: int, users: int, repeat: int, postgres_url: str) -> None:
    with tempfile.TemporaryDirectory(prefix="dodo-bench-search-") as folder:
        sqlite = await measure(
            f"sqlite+aiosqlite:///{Path(folder) / 'search.db'}", turns, users, repeat
        )
    _print("SQLite (FTS5 trigram)", sqlite)
    postgres_figures = await measure(postgres_url, turns, users, repeat)
    _print("PostgreSQL (pg_trgm GIN)", postgres_figures)
    worst = max(postgres_figures[name]["p99_ms"] for name in QUERIES)
    verdict = "PASS" if worst < TARGET_P99_MS else "MISS"
    print(f"\n{verdict}: PostgreSQL search p99 {worst} ms (target < {TARGET_P99_MS:.0f} ms)")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    with postgres(uuid.uuid4().hex[:8], os.environ.get("BENCH_POSTGRES_URL")) as url:
        fast_event_loop(main(args.turns, args.users, args.repeat, url))


if __name__ == "__main__":
    cli()
