"""Run the whole benchmark on this machine and print the figures table (bench/README.md).

    .venv/bin/python -m bench.run            # the full run, a few minutes
    .venv/bin/python -m bench.run --quick    # tiny sizes: checks that everything runs

Everything listens on 127.0.0.1 and runs in a process of its own: the fake
upstream, the bare proxy, the service (one uvicorn worker) on PostgreSQL and
Redis plus a second instance for cross-instance stops, the service on its
embedded defaults (SQLite, in-process registry), and the load generator.
PostgreSQL and Redis are set up and cleaned up by `bench.servers`.

Each target is started, measured alone and stopped before the next one
starts; the upstream runs throughout. Server CPU and memory come
from `/proc/<pid>/stat` around each scenario; memory per open stream is the
peak RSS while 1,000 streams are open, less the RSS before, divided by 1,000.
Then the first burst, on a server started afresh for each of several rounds
(`bench.burst`), and a worker's start-up and memory at rest (`bench.startup`);
their rows join the same table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import burst, startup
from bench.harness import FULL, QUICK, Bench, Sizes
from bench.procs import raise_open_files_limit
from bench.servers import DEFAULT_REDIS_URL, delete_redis_keys, postgres
from bench.table import attach_burst, attach_startup, print_report


def columns(compare_httpx: bool) -> list[tuple[str, str, str]]:
    """(column name, what runs, HTTP client) in table order.

    The proxy runs on both clients: httpx is the issue's yardstick, httpx2 the
    service's own client, so each service column has a proxy on its client.
    """
    out = [("proxy", "proxy", "httpx"), ("proxy (httpx2)", "proxy", "httpx2")]
    out.append(("service", "service", "httpx2"))
    if compare_httpx:
        out.append(("service (httpx)", "service", "httpx"))
    out.append(("service (embedded)", "embedded", "httpx2"))
    return out


def run(
    sizes: Sizes,
    *,
    compare_httpx: bool = False,
    only: frozenset[str] = frozenset(),
    postgres_url: str | None = None,
    redis_url: str = DEFAULT_REDIS_URL,
    logs: Path | None = None,
    burst_rounds: int = 0,
    startup_runs: int = 0,
) -> dict[str, Any]:
    """Measure every column and return the raw results (`bench.table` prints them).

    Then, with `burst_rounds`, the first burst on a fresh server round after round
    (bench.burst), and with `startup_runs`, a worker's start-up (bench.startup).
    """
    raise_open_files_limit()
    results: dict[str, Any] = {"sizes": asdict(sizes), "targets": {}, "clients": {}}
    with tempfile.TemporaryDirectory(prefix="dodo-bench-") as tmp:
        bench = Bench(sizes, Path(tmp))
        try:
            with postgres(bench.run_id, postgres_url) as database_url:
                results["targets"]["upstream"] = bench.measure(bench.start_upstream())
                for name, kind, client in columns(compare_httpx):
                    if only and name not in only and kind not in only:
                        continue
                    with bench.alone():
                        if kind == "proxy":
                            target = bench.start_proxy(name, client)
                        elif kind == "service":
                            target = bench.start_service(name, database_url, redis_url, client)
                        else:
                            sqlite_url = f"sqlite+aiosqlite:///{tmp}/embedded.db"
                            target = bench.start_service(name, sqlite_url, "", client)
                        results["targets"][name] = bench.measure(target)
                        results["clients"][name] = client
                    if kind == "service" and "floor" not in results:
                        results["floor"] = bench.floor(database_url, redis_url)
                measured = tuple(name for name in burst.TARGETS if name in results["targets"])
                if burst_rounds and measured:
                    results["burst"] = burst.rounds(
                        bench, burst_rounds, measured, database_url, redis_url
                    )
                    attach_burst(results)
        finally:
            bench.stop()
            delete_redis_keys(redis_url, f"bench-{bench.run_id}:")
        if startup_runs and "service (embedded)" in results["targets"]:
            results["startup"] = startup.measure(startup_runs)
            attach_startup(results)
        results["tracebacks"] = sum(
            log.read_text(errors="replace").count("Traceback") for log in Path(tmp).glob("*.log")
        )
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
            for log in Path(tmp).glob("*.log"):
                shutil.copy(log, logs / log.name)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a smoke test")
    parser.add_argument(
        "--httpx", action="store_true", help="also run the service on httpx instead of httpx2"
    )
    parser.add_argument("--json", type=Path, help="also write every raw figure here")
    parser.add_argument("--logs", type=Path, help="keep the servers' logs in this folder")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated columns or kinds (proxy, service, embedded) to measure;"
        " the upstream is always measured",
    )
    parser.add_argument(
        "--burst-rounds",
        type=int,
        help="rounds of the first burst on a fresh server (bench.burst); 0: none"
        " (default 5, 1 with --quick)",
    )
    parser.add_argument(
        "--startup-runs",
        type=int,
        help="cold starts of a worker (bench.startup); 0: none (default 5, 1 with --quick)",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    # A SIGTERM ends the run like Ctrl-C does: the servers it started are stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    results = run(
        sizes,
        compare_httpx=args.httpx,
        only=frozenset(name for name in args.only.split(",") if name),
        postgres_url=os.environ.get("BENCH_POSTGRES_URL"),
        redis_url=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
        logs=args.logs,
        burst_rounds=(1 if args.quick else 5) if args.burst_rounds is None else args.burst_rounds,
        startup_runs=(1 if args.quick else 5) if args.startup_runs is None else args.startup_runs,
    )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    print_report(results)


if __name__ == "__main__":
    main()
