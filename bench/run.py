"""Run the whole benchmark on this machine and print the figures table (bench/README.md).

    .venv/bin/python -m bench.run            # the full run: three repetitions
    .venv/bin/python -m bench.run --quick    # tiny sizes, one repetition: checks that it runs

Everything listens on 127.0.0.1 and runs in a process of its own: the fake
upstream, the two yardsticks (the lean relay, `bench.proxy`, and the typical
FastAPI SSE proxy, `bench.typical_proxy`), the service (one uvicorn worker) on
PostgreSQL and Redis plus a second instance for cross-instance stops, the
service on its embedded defaults (SQLite, in-process registry), and the load
generator. PostgreSQL and Redis are set up and cleaned up by `bench.servers`.

Each target is started, measured alone and stopped before the next one
starts; the upstream runs throughout. Every column is measured `--reps`
times, the order rotating between repetitions, and the table gives each
figure's median with its spread (min-max). Server CPU and memory come
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
from bench.harness import FULL, QUICK, Bench, Sizes, Target, rotated
from bench.procs import raise_open_files_limit
from bench.servers import DEFAULT_REDIS_URL, delete_redis_keys, postgres
from bench.table import TYPICAL, print_report


def columns(compare_httpx: bool) -> list[tuple[str, str, str]]:
    """(column name, what runs, HTTP client) in table order.

    The lean relay runs on both clients: httpx is the issue's yardstick, httpx2 the
    service's own client, so each service column has a relay on its client. The
    typical proxy (bench/typical_proxy.py) is issue 59's yardstick, on httpx2.
    """
    out = [("proxy", "proxy", "httpx"), ("proxy (httpx2)", "proxy", "httpx2")]
    out.append((TYPICAL, "typical", "httpx2"))
    out.append(("service", "service", "httpx2"))
    if compare_httpx:
        out.append(("service (httpx)", "service", "httpx"))
    out.append(("service (embedded)", "embedded", "httpx2"))
    return out


def run(
    sizes: Sizes,
    *,
    reps: int = 1,
    compare_httpx: bool = False,
    only: frozenset[str] = frozenset(),
    postgres_url: str | None = None,
    redis_url: str = DEFAULT_REDIS_URL,
    logs: Path | None = None,
    burst_rounds: int = 0,
    startup_runs: int = 0,
) -> dict[str, Any]:
    """Measure every column `reps` times and return the raw results (`bench.table` prints them).

    Each repetition measures every column once, each on a server started afresh,
    in an order that rotates from one repetition to the next (`rotated`); the
    upstream is measured in each too, as the base of that repetition's "added"
    figures, and the floor after the first service column of each. Then, with
    `burst_rounds`, the first burst on a fresh server round after round
    (bench.burst), and with `startup_runs`, a worker's start-up (bench.startup).
    """
    raise_open_files_limit()
    chosen = [
        column
        for column in columns(compare_httpx)
        if not only or column[0] in only or column[1] in only
    ]
    results: dict[str, Any] = {
        "sizes": asdict(sizes),
        "columns": ["upstream", *(name for name, _, _ in chosen)],
        "clients": {name: client for name, _, client in chosen},
        "reps": [],
        "floors": [],
    }
    with tempfile.TemporaryDirectory(prefix="dodo-bench-") as tmp:
        bench = Bench(sizes, Path(tmp))
        try:
            with postgres(bench.run_id, postgres_url) as database_url:
                upstream = bench.start_upstream()
                for rep in range(reps):
                    measured: dict[str, Any] = {}
                    results["reps"].append(measured)
                    floored = False
                    for name, kind, client in rotated([("upstream", "upstream", ""), *chosen], rep):
                        if kind == "upstream":
                            measured[name] = bench.measure(upstream)
                            continue
                        with bench.alone():
                            target = _start(bench, name, kind, client, database_url, redis_url)
                            measured[name] = bench.measure(target)
                        if kind == "service" and not floored:
                            results["floors"].append(bench.floor(database_url, redis_url))
                            floored = True
                burst_targets = tuple(name for name in burst.TARGETS if name in results["clients"])
                if burst_rounds and burst_targets:
                    results["burst"] = burst.rounds(
                        bench, burst_rounds, burst_targets, database_url, redis_url
                    )
        finally:
            bench.stop()
            delete_redis_keys(redis_url, f"bench-{bench.run_id}:")
        if startup_runs and "service (embedded)" in results["clients"]:
            results["startup"] = startup.measure_runs(startup_runs)
        results["tracebacks"] = sum(
            log.read_text(errors="replace").count("Traceback") for log in Path(tmp).glob("*.log")
        )
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
            for log in Path(tmp).glob("*.log"):
                shutil.copy(log, logs / log.name)
    return results


def _start(
    bench: Bench, name: str, kind: str, client: str, database_url: str, redis_url: str
) -> Target:
    if kind == "proxy":
        return bench.start_proxy(name, client)
    if kind == "typical":
        return bench.start_typical_proxy(name)
    if kind == "service":
        return bench.start_service(name, database_url, redis_url, client)
    # One file for every repetition, as the PostgreSQL column keeps its database.
    sqlite_url = f"sqlite+aiosqlite:///{bench.workdir}/embedded.db"
    return bench.start_service(name, sqlite_url, "", client)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a smoke test")
    parser.add_argument(
        "--reps",
        type=int,
        help="times each column is measured, the order rotating between repetitions"
        " (default 3, 1 with --quick)",
    )
    parser.add_argument(
        "--httpx", action="store_true", help="also run the service on httpx instead of httpx2"
    )
    parser.add_argument("--json", type=Path, help="also write every raw figure here")
    parser.add_argument("--logs", type=Path, help="keep the servers' logs in this folder")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated columns or kinds (proxy, typical, service, embedded) to measure;"
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
        reps=(1 if args.quick else 3) if args.reps is None else args.reps,
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
