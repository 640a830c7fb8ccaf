"""`scripts/cluster`: the topology of `docs/operate/scaling.md` on this machine, to try by hand.

Three instances (uvicorn, as `scripts/run` serves one) behind HAProxy, on
the machine's PostgreSQL through PgBouncer in transaction mode, and on Redis;
the same parts the tests of several instances start (`Cluster`, `PgBouncer`),
so what is tried here is what they check. Its own database (made when
missing, kept between runs), migrated as a deploy step on the direct
connection; the instances read the checkout's `.env` and environment for
everything else (the model, keys). Ctrl-C stops it all, in order: the load
balancer, the instances (which store what they were running), then the pooler.

Redis is a primary with a replica and three Sentinels of the cluster's own
(`SentinelSet`, as the failover tests start them): SIGKILL the primary to see
the Sentinels promote the replica within seconds and the instances follow.
`--redis-url` names one Redis server to use instead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
from dotenv import dotenv_values

from app.config import Settings
from tests.support.cluster import Cluster
from tests.support.pgbouncer import PgBouncer
from tests.support.processes import PROJECT_ROOT
from tests.support.redis_topologies import SentinelSet

DEFAULT_DATABASE = "postgresql+asyncpg://postgres@127.0.0.1:5432/dodo_cluster"


def own_settings() -> dict[str, str]:
    """The settings the checkout's `.env` and the environment give, as `scripts/run` reads them."""
    names = {name.upper() for name in Settings.model_fields}
    found = {
        name: value
        for name, value in dotenv_values(PROJECT_ROOT / ".env").items()
        if name in names and value is not None
    }
    found.update({name: value for name, value in os.environ.items() if name in names})
    return found


async def ensure_database(url: str) -> None:
    """Make the database `url` names on its server, unless it is there."""
    parts = urlsplit(url.replace("+asyncpg", ""))
    name = parts.path.lstrip("/")
    conn = await asyncpg.connect(urlunsplit(parts._replace(path="/postgres")))
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def run(args: argparse.Namespace, workdir: Path) -> None:
    await ensure_database(args.database_url)
    sentinels = None if args.redis_url else SentinelSet(workdir / "redis")
    if sentinels is not None:
        sentinels.start()
    redis = sentinels.environment if sentinels else {"REDIS_URL": args.redis_url}
    pooler = PgBouncer(args.database_url)
    pooler.start()
    cluster = Cluster(
        workdir,
        {
            **own_settings(),
            "DATA_DIR": str(workdir / "data"),
            "DATABASE_URL": pooler.url(args.database_url),
            "DB_TRANSACTION_POOLER": "true",
            "MIGRATE_DATABASE_URL": args.database_url,
            "AUTO_MIGRATE": "false",
            **redis,
            "REDIS_PREFIX": args.redis_prefix,
        },
        port=args.port,
    )
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await cluster.start(args.instances)
        print(f"The service: {cluster.url} (HAProxy, checking each instance's /ready)")
        for each in cluster.instances:
            print(f"  instance {each.name}: {each.url}, its log {each.log_path}")
        print(f"PgBouncer (transaction mode): 127.0.0.1:{pooler.port} -> {args.database_url}")
        if sentinels is not None:
            primary = sentinels.primary_port()
            print(f"Redis: primary 127.0.0.1:{primary} (SIGKILL it to fail over), its Sentinels")
            print(f"  {sentinels.sentinels}, keys under {args.redis_prefix}")
        else:
            print(f"Redis: {args.redis_url}, keys under {args.redis_prefix}")
        print("Ctrl-C stops it all.", flush=True)
        await stopping.wait()
    finally:
        print("Stopping: HAProxy, the instances, PgBouncer...", flush=True)
        await cluster.close()
        pooler.remove()
        if sentinels is not None:
            sentinels.stop()


def main() -> None:
    parser = argparse.ArgumentParser(prog="scripts/cluster", description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8888, help="HAProxy's port (8888)")
    parser.add_argument("--instances", type=int, default=3, help="how many instances (3)")
    parser.add_argument(
        "--database-url",
        default=DEFAULT_DATABASE,
        help="the database, reached directly; made when missing (%(default)s)",
    )
    parser.add_argument(
        "--redis-url", default="", help="one Redis server, instead of Sentinels of its own"
    )
    parser.add_argument("--redis-prefix", default="dodo-cluster:", help="(%(default)s)")
    parser.add_argument(
        "--dir", default="data/cluster", help="logs and the shared DATA_DIR (%(default)s)"
    )
    args = parser.parse_args()
    workdir = Path(args.dir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(args, workdir))


if __name__ == "__main__":
    main()
