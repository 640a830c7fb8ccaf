"""What one turn costs the shared engines, and three instances behind HAProxy beside one direct.

    python -m bench.engines            # 20 turns of each kind; 600 chat streams at 32
    python -m bench.engines --quick    # tiny sizes: checks that it runs
    python -m bench.engines --json out.json

Instances scale out; PostgreSQL and Redis are shared by all of them, so they
set how far. For each topology, and each kind of turn (a chat answer, a chat
answer after one web search, a deep research), it counts what the turns cost
the engines, per turn:

- Redis: commands, by command, from `INFO commandstats` of a private
  redis-server, and Redis's CPU (`INFO cpu`);
- PostgreSQL: statements by their first word, from `pg_stat_statements` of a
  private server started with it (on a server without it, `BENCH_POSTGRES_URL`,
  transactions and rows from `pg_stat_database`, read after its counts are
  flushed), and the CPU of the database's server processes.

What the instances do while idle (heartbeats, the load balancer's `/ready`
checks) is measured over an idle spell first and taken off. Then chat turns
at saturation (`bench.loadgen`, a process of its own): turns per second, and
the CPU each process spent (instances, HAProxy, PgBouncer, PostgreSQL's
server processes, Redis), so the one that saturates shows.

The topologies: `one direct`, one instance on PostgreSQL and Redis; `three
behind HAProxy`, three instances behind HAProxy on PgBouncer in transaction
mode (`DB_TRANSACTION_POOLER`), the tests' parts (`tests/support/cluster.py`).
The model and the search are the tests' fakes, in this process. On a small
machine the instances, the engines and the load share the cores: the counts
per turn hold anywhere, the throughput says what limits it there.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import redis.asyncio

from bench.procs import proc_stat
from bench.servers import database_in, postgres
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Body, Reply
from tests.fakes.tavily_server import FakeTavily
from tests.support.cluster import Cluster
from tests.support.pgbouncer import PgBouncer
from tests.support.processes import PROJECT_ROOT, RedisServer, ServiceProcess
from tests.support.research import STEPS, over_http
from tests.support.sse import collect

KINDS = {
    "chat": ("chat", "Hello, number {n}"),
    "search": ("chat", "Search the web for heat pumps, number {n}"),
    "deep": ("deep", "How big is the heat pump market? Number {n}"),
}
"""Each kind of turn: its agent and its question."""
IDLE_SECONDS = 5.0
"""The idle spell whose commands and statements are taken off each kind's, pro rata."""
STATS_FLUSH_SECONDS = 11.0
"""How long a server process may hold its `pg_stat_database` counts before sharing them."""
WARM_TURNS = 3
"""Turns of each kind before the counted ones: one on each instance behind HAProxy."""
HEALTH_CHECK = "SELECT $1"
"""`/ready`'s round trips, as pg_stat_statements writes them: not counted."""
ANSWER = "Heat pumps move heat rather than make it, so they use less power."
Readings = dict[str, float]


@dataclass
class Sizes:
    turns: int
    """Turns of each kind, one after another, for the counts."""
    streams: int
    concurrency: int
    """Chat streams in all, and at once, for the throughput."""


FULL = Sizes(turns=20, streams=600, concurrency=32)
QUICK = Sizes(turns=2, streams=20, concurrency=4)


class Model(FakeOpenAI):
    """The model's side of every kind: deep research's steps, one web search when asked."""

    def __init__(self) -> None:
        super().__init__(self._answer)
        self._steps = tuple(prompt.split("{")[0] for prompt in STEPS.values())

    def _answer(self, body: Body) -> Reply:
        if self.system_text(body).startswith(self._steps):
            found = over_http(self, body)
            return found if isinstance(found, Reply) else Reply.text(found)
        asked = json.dumps(body["messages"])
        if "Search the web" in asked and not self.has_tool_results(body):
            return Reply.tool_calls([("web_search", {"query": "heat pumps"})])
        return Reply.text(ANSWER)


@dataclass
class Engines:
    """The shared engines one topology runs on, and how to read what they did."""

    redis: redis.asyncio.Redis
    """A connection of the bench's own: its `INFO`s are not counted."""
    database_url: str
    """Direct, for reading its statistics."""
    statements: bool
    """Whether pg_stat_statements counts statements; else pg_stat_database's counters."""
    processes: dict[str, int] = field(default_factory=dict)
    """The processes of the topology by name (instances, HAProxy, PgBouncer), for their CPU."""

    async def read(self) -> Readings:
        """Every count there is, as `redis:<command>`, `pg:<verb>`, `cpu:<process>`."""
        counts: Readings = defaultdict(float)
        for name, stats in (await self.redis.info("commandstats")).items():
            if name != "cmdstat_info":  # the service sends none
                counts[f"redis:{name.removeprefix('cmdstat_')}"] = int(stats["calls"])
        cpu = await self.redis.info("cpu")
        counts["cpu:redis"] = float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])
        conn = await asyncpg.connect(self.database_url.replace("+asyncpg", ""))
        try:
            if self.statements:
                rows = await conn.fetch(
                    "SELECT query, calls FROM pg_stat_statements s JOIN pg_database d"
                    " ON d.oid = s.dbid WHERE d.datname = current_database()"
                )
                for row in rows:
                    query = " ".join(row["query"].split())
                    if query != HEALTH_CHECK and "pg_stat_" not in query:
                        counts[f"pg:{query.split(' ', 1)[0].upper()}"] += row["calls"]
            else:
                row = await conn.fetchrow(
                    "SELECT xact_commit + xact_rollback AS transactions, tup_returned,"
                    " tup_fetched, tup_inserted, tup_updated, tup_deleted"
                    " FROM pg_stat_database WHERE datname = current_database()"
                )
                assert row is not None
                counts.update({f"pg:{name}": value for name, value in row.items()})
            backends = await conn.fetch(
                "SELECT pid FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        finally:
            await conn.close()
        for row in backends:
            with contextlib.suppress(OSError):
                counts[f"pg-backend:{row['pid']}"] = proc_stat(row["pid"]).cpu_seconds
        for name, pid in self.processes.items():
            counts[f"cpu:{name}"] = proc_stat(pid).cpu_seconds
        return counts

    async def spent(self, before: Readings) -> Readings:
        """What happened since `before`: each count's growth (PostgreSQL's server processes
        summed as `cpu:postgres`, over those alive at both ends)."""
        if not self.statements:
            await asyncio.sleep(STATS_FLUSH_SECONDS)
        after = await self.read()
        grown: Readings = defaultdict(float)
        for key, value in after.items():
            if key.startswith("pg-backend:"):
                if key in before:
                    grown["cpu:postgres"] += value - before[key]
            else:
                grown[key] = value - before.get(key, 0)
        return grown


async def ask(client: httpx.AsyncClient, kind: str, n: int, run: str) -> str:
    agent, question = KINDS[kind]
    params = {"query": question.format(n=n), "conversationId": f"{run}-{kind}-{n}"}
    async with client.stream("GET", f"/agent/{agent}/stream", params=params) as response:
        events = await collect(response)
    return str(events[-1].get("status", "")) if events else "no events"


async def costs(
    engines: Engines, client: httpx.AsyncClient, sizes: Sizes, run: str
) -> dict[str, Any]:
    """Per turn of each kind, what the engines did, less what they do idle."""
    idle_start = await engines.read()
    await asyncio.sleep(IDLE_SECONDS)
    idle = await engines.spent(idle_start)
    idle_seconds = IDLE_SECONDS + (0.0 if engines.statements else STATS_FLUSH_SECONDS)
    result: dict[str, Any] = {}
    for kind in KINDS:
        # Warm, on every instance: its agent built, its pools opened, its tables made.
        for n in range(-WARM_TURNS, 0):
            await ask(client, kind, n, run)
        before = await engines.read()
        began = time.monotonic()
        statuses = Counter([await ask(client, kind, n, run) for n in range(sizes.turns)])
        grown = await engines.spent(before)
        seconds = time.monotonic() - began
        share = seconds / idle_seconds
        per_turn = {
            key: max(0.0, value - idle.get(key, 0) * share) / sizes.turns
            for key, value in grown.items()
            if not key.startswith("cpu:") or key in ("cpu:redis", "cpu:postgres")
        }
        result[kind] = {
            "statuses": dict(statuses),
            "redis_commands": sum(v for k, v in per_turn.items() if k.startswith("redis:")),
            "redis_by_command": _top(per_turn, "redis:"),
            "postgres": sum(v for k, v in per_turn.items() if k.startswith("pg:")),
            "postgres_by_verb": _top(per_turn, "pg:"),
            "redis_cpu_ms": 1000 * per_turn.get("cpu:redis", 0.0),
            "postgres_cpu_ms": 1000 * per_turn.get("cpu:postgres", 0.0),
        }
        print(f"  {kind}: {_line(result[kind])}", file=sys.stderr, flush=True)
    return result


def _top(per_turn: Readings, prefix: str) -> Readings:
    """The counts under `prefix` worth a line (a twentieth a turn or more), largest first."""
    found = {
        key.removeprefix(prefix): round(value, 2)
        for key, value in per_turn.items()
        if key.startswith(prefix) and value >= 0.05
    }
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def _line(cost: dict[str, Any]) -> str:
    return (
        f"{cost['statuses']}, Redis {cost['redis_commands']:.1f} commands"
        f" ({cost['redis_cpu_ms']:.2f} ms CPU), PostgreSQL {cost['postgres']:.1f}"
        f" ({cost['postgres_cpu_ms']:.2f} ms CPU) a turn"
    )


async def throughput(engines: Engines, url: str, sizes: Sizes, run: str) -> dict[str, Any]:
    """Chat turns at saturation from the load generator, with each process's CPU around it."""
    before = await engines.read()
    loadgen = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "bench.loadgen", "--url", url, "--kind", "service", "--run-id", f"{run}-load"),
        *("--concurrency", str(sizes.concurrency), "--streams", str(sizes.streams)),
        *("--timeout", "300"),
        cwd=PROJECT_ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    output, _ = await loadgen.communicate()
    grown = await engines.spent(before)
    report: dict[str, Any] = json.loads(output)
    cpu = {k.removeprefix("cpu:"): round(v, 2) for k, v in grown.items() if k.startswith("cpu:")}
    result = {
        "completed": report["completed"],
        "streams": sizes.streams,
        "turns_per_second": report["turns_per_second"],
        "wall_seconds": report["wall_seconds"],
        "errors": report["errors"],
        "cpu_seconds": dict(sorted(cpu.items(), key=lambda kv: -kv[1])),
    }
    print(
        f"  throughput: {result['turns_per_second']:.1f} turns/s,"
        f" {result['completed']}/{sizes.streams} completed, CPU s {result['cpu_seconds']}",
        file=sys.stderr,
        flush=True,
    )
    return result


def instance_env(model: FakeOpenAI, search: FakeTavily, redis_url: str, run: str) -> dict[str, str]:
    return {
        "REDIS_URL": redis_url,
        "REDIS_PREFIX": f"bench-{run}:",
        "LLM_BASE_URL": model.base_url,
        "LLM_API_KEY": "bench-key",
        "LLM_MODEL": "bench",
        "TAVILY_API_KEY": "tvly-bench",
        "TAVILY_BASE_URL": search.base_url,
        "RECOMMENDATIONS_ENABLED": "false",
        "DEEP_REPORT_FORMATS": "none",
        "PPTX_PDF": "false",
        "API_KEYS": "",
        # Every stream comes from the one local user: no per-user limits.
        "MAX_STREAMS_PER_USER": "0",
        "STREAMS_PER_MINUTE": "0",
        "LOG_LEVEL": "WARNING",
    }


@contextlib.asynccontextmanager
async def one_direct(
    workdir: Path, database_url: str, env: dict[str, str]
) -> AsyncIterator[tuple[str, dict[str, int]]]:
    instance = ServiceProcess("one", workdir, {**env, "DATABASE_URL": database_url})
    await instance.start()
    try:
        yield instance.url, {"instance": instance.pid}
    finally:
        await instance.stop()


@contextlib.asynccontextmanager
async def three_behind_haproxy(
    workdir: Path, database_url: str, env: dict[str, str]
) -> AsyncIterator[tuple[str, dict[str, int]]]:
    pooler = PgBouncer(database_url)
    pooler.start()
    cluster = Cluster(
        workdir,
        {
            **env,
            "DATABASE_URL": pooler.url(database_url),
            "DB_TRANSACTION_POOLER": "true",
            "MIGRATE_DATABASE_URL": database_url,
            "AUTO_MIGRATE": "false",
        },
    )
    try:
        await cluster.start(3)
        assert cluster.haproxy is not None
        processes = {f"instance {each.name}": each.pid for each in cluster.instances}
        yield cluster.url, {**processes, "haproxy": cluster.haproxy.pid, "pgbouncer": pooler.pid}
    finally:
        await cluster.close()
        pooler.remove()


TOPOLOGIES = {"one direct": one_direct, "three behind HAProxy": three_behind_haproxy}


async def measure(
    sizes: Sizes, databases: dict[str, str], statements: bool, workdir: Path
) -> dict[str, Any]:
    run = uuid.uuid4().hex[:8]
    redis_server = RedisServer(workdir)
    redis_server.start()
    results: dict[str, Any] = {}
    try:
        async with (
            Model() as model,
            FakeTavily().running() as search,
            redis.asyncio.Redis.from_url(redis_server.url) as reader,
        ):
            env = instance_env(model, search, redis_server.url, run)
            for name, topology in TOPOLOGIES.items():
                print(f"{name} ...", file=sys.stderr, flush=True)
                place = workdir / name.replace(" ", "-")
                place.mkdir()
                async with (
                    topology(place, databases[name], env) as (url, processes),
                    httpx.AsyncClient(base_url=url, timeout=300) as client,
                ):
                    engines = Engines(reader, databases[name], statements, processes)
                    results[name] = {
                        "per_turn": await costs(engines, client, sizes, run),
                        "throughput": await throughput(engines, url, sizes, run),
                    }
    finally:
        redis_server.kill()
    return results


@contextlib.contextmanager
def databases(server_url: str) -> Iterator[dict[str, str]]:
    """A database of each topology's own on the server, made and dropped."""
    with (
        database_in(server_url, "dodo_engines_one") as one,
        database_in(server_url, "dodo_engines_three") as three,
    ):
        yield {"one direct": one, "three behind HAProxy": three}


async def _has_statements(url: str) -> bool:
    conn = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        await conn.fetch("SELECT 1 FROM pg_stat_statements LIMIT 1")
    except asyncpg.PostgresError:
        return False
    finally:
        await conn.close()
    return True


def table(results: dict[str, Any]) -> str:
    names = list(results)
    lines = [
        f"| per turn | {' | '.join(names)} |",
        f"| --- | {' | '.join('---' for _ in names)} |",
    ]
    for kind in KINDS:
        for label, key in (
            ("Redis commands", "redis_commands"),
            ("Redis CPU ms", "redis_cpu_ms"),
            ("PostgreSQL statements", "postgres"),
            ("PostgreSQL CPU ms", "postgres_cpu_ms"),
        ):
            cells = [f"{results[n]['per_turn'][kind][key]:.2f}" for n in names]
            lines.append(f"| {kind}: {label} | {' | '.join(cells)} |")
    cells = [
        f"{results[n]['throughput']['turns_per_second']:.1f}"
        f" ({results[n]['throughput']['completed']}/{results[n]['throughput']['streams']})"
        for n in names
    ]
    lines.append(f"| chat turns/s at saturation | {' | '.join(cells)} |")
    return "\n".join(lines)


def run(sizes: Sizes, workdir: Path, server_url: str | None = None) -> tuple[dict[str, Any], bool]:
    """Every figure, on a private PostgreSQL (or a database made on `server_url`'s server), and
    whether PostgreSQL's are pg_stat_statements' statements."""
    preload = ("shared_preload_libraries=pg_stat_statements",)
    with postgres("engines", server_url, settings=preload) as server, databases(server) as made:
        statements = all(asyncio.run(_has_statements(url)) for url in made.values())
        return asyncio.run(measure(sizes, made, statements, workdir)), statements


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks that it runs")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dodo-bench-engines-") as folder:
        results, statements = run(
            QUICK if args.quick else FULL, Path(folder), os.environ.get("BENCH_POSTGRES_URL")
        )
    print(table(results))
    if not statements:
        print("(PostgreSQL: transactions and rows from pg_stat_database, no pg_stat_statements)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
