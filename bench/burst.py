"""The first burst: 50 streams starting at once on a server that has just started.

    .venv/bin/python -m bench.burst               # 5 rounds (about 5 minutes)
    .venv/bin/python -m bench.burst --rounds 9 --only "proxy (httpx2),service"

One full run's p99 at 50 concurrent is its two slowest streams of 200, one draw
from a spread of a factor of two between identical rounds (bench/README.md), so
a single run can neither show a gain nor a fall. Here each round starts every
target afresh, in an order that rotates from round to round, warms it as
`bench.run` does (50 streams at 10 concurrent, then 30 at one), and opens the
burst: 200 streams at 50 concurrent, 20 tokens at 20 ms. `bench.table` turns
the rounds into each target's median p50 and p99 and its ratio to the relay's
(the httpx2 proxy, on the service's own client). `bench.run` runs this too.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.harness import FULL, QUICK, Bench, Sizes, Target, rotated
from bench.procs import raise_open_files_limit
from bench.servers import DEFAULT_REDIS_URL, delete_redis_keys, postgres
from bench.table import BURST_RELAY, burst_lines, burst_summary

TARGETS = (BURST_RELAY, "service", "service (embedded)")
BURST = (50, 200)
"""(concurrent streams, streams in all) in the full run: its first burst."""


def burst_of(sizes: Sizes) -> tuple[int, int]:
    return BURST if sizes is FULL else sizes.first_event[-1]


def _start(bench: Bench, name: str, database_url: str, redis_url: str) -> Target:
    if name == BURST_RELAY:
        return bench.start_proxy(name, "httpx2")
    if name == "service":
        return bench.start_service(name, database_url, redis_url, "httpx2")
    sqlite_url = f"sqlite+aiosqlite:///{bench.workdir}/burst-{len(bench.procs)}-{os.getpid()}.db"
    return bench.start_service(name, sqlite_url, "", "httpx2")


def one_burst(bench: Bench, target: Target, burst: tuple[int, int]) -> dict[str, Any]:
    """Warm `target` as bench.run does (then its streams one at a time), then the burst;
    the burst's load report."""
    bench.warm_up(target)
    _, report = bench.first_events(target, (bench.sizes.first_event[0], burst))
    return report


def rounds(
    bench: Bench, count: int, only: tuple[str, ...], database_url: str, redis_url: str
) -> dict[str, Any]:
    """`count` rounds of the burst on each of `only`, each on a fresh server.

    `bench` has its upstream running; every round's p50, p99 and server CPU are kept.
    """
    burst = burst_of(bench.sizes)
    out: dict[str, Any] = {"burst": list(burst), "rounds": []}
    for index in range(count):
        figures: dict[str, dict[str, Any]] = {}
        for name in rotated(only, index):
            print(f"burst round {index + 1}: {name} ...", file=sys.stderr, flush=True)
            with bench.alone():
                report = one_burst(bench, _start(bench, name, database_url, redis_url), burst)
            figures[name] = {
                "p50": report["first_token_ms"]["p50"],
                "p99": report["first_token_ms"]["p99"],
                "cpu_seconds": report["cpu_seconds"],
                "completed": report["completed"],
                "streams": report["streams"],
            }
        out["rounds"].append(figures)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a smoke test")
    parser.add_argument(
        "--only", default=",".join(TARGETS), help=f"comma-separated, of: {', '.join(TARGETS)}"
    )
    args = parser.parse_args(argv)
    only = tuple(name for name in TARGETS if name in args.only.split(","))
    redis_url = os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL)
    raise_open_files_limit()
    with tempfile.TemporaryDirectory(prefix="dodo-burst-") as tmp:
        bench = Bench(QUICK if args.quick else FULL, Path(tmp))
        try:
            with postgres(bench.run_id, os.environ.get("BENCH_POSTGRES_URL")) as database_url:
                bench.start_upstream()
                results = rounds(bench, args.rounds, only, database_url, redis_url)
        finally:
            bench.stop()
            delete_redis_keys(redis_url, f"bench-{bench.run_id}:")
    for figures in results["rounds"]:
        print(
            "  ".join(
                f"{name}: p99 {row['p99']:.1f} ms, CPU {row['cpu_seconds']:.2f} s"
                for name, row in figures.items()
            )
        )
    for line in burst_lines(burst_summary(results)):
        print(line)


if __name__ == "__main__":
    main()
