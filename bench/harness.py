"""The processes and load runs every benchmark scenario is made of.

A `Bench` starts each server in a process of its own on a free port (the fake
upstream, the bare proxy, the service as `scripts/run` serves it), measures
one target at a time (`alone()`), and runs the load generator against it with
the server's CPU and memory read around the run (`load()`). `bench.run` (the
full table) and `bench.burst` (the first burst, round after round) use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from app.api.head_timeout import UVICORN_FLAGS
from bench.procs import free_port, proc_stat

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")

SERVED_AS = UVICORN_FLAGS
"""The service's uvicorn flag in scripts/run and the Dockerfile (beside host, port and the
graceful shutdown): the request-head timeout, so the benchmark runs the product as served."""


@dataclass(frozen=True, slots=True)
class Sizes:
    first_event: tuple[tuple[int, int], ...]
    """(concurrent streams, streams in all) for the time to first event."""
    first_event_tokens: int
    delay_ms: float
    """The upstream's inter-token delay, for every scenario but saturation."""
    saturation: tuple[int, int]
    saturation_tokens: int
    long_answers: tuple[int, int]
    """(streams, tokens each) at saturation's concurrency: where fixed costs matter less."""
    wide: int
    """Concurrent streams in the wide scenario (1,000 in the full run)."""
    wide_tokens: int
    stops: int
    floor_turns: int
    """Turns of storage and Redis work alone (bench.floor)."""
    closed_loop: tuple[int, int]
    """(clients, turns in all) of issue 59's load: each client runs turns back to back."""
    closed_loop_tokens: int
    closed_loop_delay_ms: float


FULL = Sizes(
    first_event=((1, 30), (50, 200), (200, 600)),
    first_event_tokens=20,
    delay_ms=20,
    saturation=(64, 3000),
    saturation_tokens=20,
    long_answers=(1000, 200),
    wide=1000,
    wide_tokens=100,
    stops=30,
    floor_turns=2000,
    closed_loop=(50, 2000),
    closed_loop_tokens=20,
    closed_loop_delay_ms=2,
)
QUICK = Sizes(
    first_event=((1, 3), (5, 10), (10, 20)),
    first_event_tokens=5,
    delay_ms=5,
    saturation=(4, 20),
    saturation_tokens=5,
    long_answers=(10, 20),
    wide=10,
    wide_tokens=10,
    stops=3,
    floor_turns=20,
    closed_loop=(5, 20),
    closed_loop_tokens=5,
    closed_loop_delay_ms=2,
)


def rotated(items: Sequence[T], rep: int) -> list[T]:
    """The order of repetition `rep` (from 0): A B C, then B C A, then C A B.

    Each target takes each place in turn, so a slow minute of the machine
    does not always fall on the same one (bench.run's repetitions, bench.burst's rounds).
    """
    shift = rep % len(items) if items else 0
    return [*items[shift:], *items[:shift]]


@dataclass(slots=True)
class Target:
    """One column of the table: a server the load generator reads."""

    name: str
    kind: str
    """How the load generator reads it: `openai`, `proxy` or `service` (see bench.loadgen)."""
    url: str
    pid: int
    path: str
    stop_urls: dict[str, str] = field(default_factory=dict)
    """Where stops go: "same" (this instance) and, with Redis, "across" (another one)."""
    counts_statements: bool = False


class Bench:
    def __init__(self, sizes: Sizes, workdir: Path) -> None:
        self.sizes = sizes
        self.workdir = workdir
        self.run_id = uuid.uuid4().hex[:8]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.upstream_url = ""

    # -- processes --------------------------------------------------------

    def spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> int:
        """Start a server on a free port and return that port once it answers HTTP."""
        port = free_port()
        log = self.workdir / f"{name}.log"
        with log.open("wb") as output:  # the child holds its own copy
            proc = subprocess.Popen(
                [sys.executable, *(a.replace("{port}", str(port)) for a in args)],
                cwd=ROOT,
                env={**os.environ, **(env or {})},
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        self.procs.append(proc)
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited at start-up; see {log}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).close()
            except urllib.error.HTTPError:
                return port  # it answers: up, just without a health route
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not start within 60 s") from None
                time.sleep(0.1)
            else:
                return port

    def uvicorn(
        self, name: str, module: str, env: dict[str, str], flags: tuple[str, ...] = ()
    ) -> tuple[str, int]:
        port = self.spawn(
            name,
            [
                *("-m", "uvicorn", module, "--host", "127.0.0.1", "--port", "{port}"),
                *("--workers", "1", "--log-level", "warning", "--backlog", "4096"),
                *flags,
            ],
            env,
        )
        return f"http://127.0.0.1:{port}", self.procs[-1].pid

    def stop(self, keep: int = 0) -> None:
        """Stop the processes started after the first `keep` ones (all of them by default)."""
        stopping, self.procs = self.procs[keep:], self.procs[:keep]
        for proc in stopping:
            proc.terminate()
        for proc in stopping:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """What starts in the block stops at its end, so each target is measured alone."""
        keep = len(self.procs)
        try:
            yield
        finally:
            self.stop(keep)

    def configure_upstream(self, tokens: int, delay_ms: float) -> None:
        query = f"/config?tokens={tokens}&delay_ms={delay_ms}"
        urllib.request.urlopen(self.upstream_url + query, timeout=5).close()

    # -- targets ----------------------------------------------------------

    def start_upstream(self) -> Target:
        port = self.spawn("upstream", ["-m", "bench.upstream", "--port", "{port}"])
        self.upstream_url = f"http://127.0.0.1:{port}"
        return Target(
            "upstream", "openai", self.upstream_url, self.procs[-1].pid, "/v1/chat/completions"
        )

    def start_proxy(self, name: str, httpx: str) -> Target:
        env = {"BENCH_UPSTREAM_URL": self.upstream_url + "/v1", "BENCH_HTTPX": httpx}
        url, pid = self.uvicorn(name, "bench.proxy:app", env)
        return Target(name, "proxy", url, pid, "")

    def start_typical_proxy(self, name: str) -> Target:
        env = {"BENCH_UPSTREAM_URL": self.upstream_url + "/v1"}
        url, pid = self.uvicorn(name, "bench.typical_proxy:app", env)
        return Target(name, "proxy", url, pid, "")

    def start_service(
        self,
        name: str,
        database_url: str,
        redis_url: str,
        httpx: str,
        *,
        extra_env: dict[str, str] | None = None,
        across: bool = True,
    ) -> Target:
        """The service on `database_url` and `redis_url` ("": the in-process registry).

        With Redis and `across`, a second instance beside it, where stops are sent
        across instances. `extra_env` adds to the service's environment.
        """
        env = {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "REDIS_PREFIX": f"bench-{self.run_id}:",
            "LLM_PROVIDER": "openai",
            "LLM_BASE_URL": self.upstream_url + "/v1",
            "LLM_API_KEY": "bench-key",
            "LLM_MODEL": "bench",
            "TAVILY_API_KEY": "",
            "RECOMMENDATIONS_ENABLED": "false",
            "API_KEYS": "",
            # Its thousand streams all come from the one local user: no per-user limits.
            "MAX_STREAMS_PER_USER": "0",
            "STREAMS_PER_MINUTE": "0",
            "DATA_DIR": str(self.workdir / name.replace(" ", "-")),
            "LOG_LEVEL": "WARNING",
            "BENCH_HTTPX": httpx,
            **(extra_env or {}),
        }
        module = "bench.service:bench_app"
        url, pid = self.uvicorn(name, module, env, SERVED_AS)
        target = Target(name, "service", url, pid, "", {"same": url}, counts_statements=True)
        if redis_url and across:
            second = env | {"AUTO_MIGRATE": "0"}
            other, _ = self.uvicorn(f"{name}-b", module, second, SERVED_AS)
            target.stop_urls["across"] = other
        return target

    # -- scenarios --------------------------------------------------------

    def load(
        self,
        target: Target,
        *,
        concurrency: int,
        streams: int,
        timeout: float,
        stop_url: str = "",
        sample_rss: bool = False,
        options: Sequence[str] = (),
    ) -> dict[str, Any]:
        """One load-generator run against `target`, with the server's CPU and memory around it.

        `options`: more of bench.loadgen's flags (`--timings`, `--path ...`).
        """
        argv = [
            sys.executable,
            "-m",
            "bench.loadgen",
            "--url",
            target.url,
            "--kind",
            target.kind,
            "--run-id",
            f"{self.run_id}-{uuid.uuid4().hex[:6]}",
            "--concurrency",
            str(concurrency),
            "--streams",
            str(streams),
            "--timeout",
            str(timeout),
        ]
        if target.path:
            argv += ["--path", target.path]
        if stop_url:
            argv += ["--stop-url", stop_url]
        argv += options
        statements = self.statements(target)
        before = proc_stat(target.pid)
        peak = before.rss_bytes
        # A file, not a pipe: a report with every stream's timings outgrows a pipe's buffer,
        # and the load generator would block writing it while this waits for it to end.
        with tempfile.TemporaryFile() as out, subprocess.Popen(argv, cwd=ROOT, stdout=out) as proc:
            while proc.poll() is None:
                if sample_rss:
                    peak = max(peak, proc_stat(target.pid).rss_bytes)
                time.sleep(0.05 if sample_rss else 0.2)
            after = proc_stat(target.pid)
            out.seek(0)
            report: dict[str, Any] = json.loads(out.read())
        report["cpu_seconds"] = after.cpu_seconds - before.cpu_seconds
        report["rss_before"] = before.rss_bytes
        report["rss_peak"] = max(peak, after.rss_bytes)
        if statements is not None:
            now = self.statements(target) or {}
            report["statements"] = {k: v - statements.get(k, 0) for k, v in now.items()}
        print(
            f"  {report['completed']}/{streams} in {report['wall_seconds']:.1f} s,"
            f" first event p50 {report['first_token_ms']['p50']:.1f} ms,"
            f" {report['turns_per_second']:.0f} turns/s, errors {report['errors']}",
            file=sys.stderr,
            flush=True,
        )
        return report

    def statements(self, target: Target) -> dict[str, int] | None:
        if not target.counts_statements:
            return None
        with urllib.request.urlopen(target.url + "/_bench/statements", timeout=5) as response:
            counts: dict[str, int] = json.loads(response.read())
        return counts

    def warm_up(self, target: Target) -> None:
        """50 short turns at 10 concurrent: the pools and caches every scenario starts with."""
        self.configure_upstream(self.sizes.saturation_tokens, 0)
        self.load(target, concurrency=10, streams=50, timeout=60)

    def first_events(
        self, target: Target, scenarios: Sequence[tuple[int, int]]
    ) -> list[dict[str, Any]]:
        """Each (concurrent streams, streams in all) in turn, on the first-event answers."""
        self.configure_upstream(self.sizes.first_event_tokens, self.sizes.delay_ms)
        return [
            self.load(target, concurrency=concurrency, streams=streams, timeout=120)
            for concurrency, streams in scenarios
        ]

    def measure(self, target: Target) -> dict[str, Any]:
        sizes = self.sizes
        print(f"measuring {target.name} ...", file=sys.stderr, flush=True)
        results: dict[str, Any] = {}
        self.warm_up(target)
        for (concurrency, _), report in zip(
            sizes.first_event, self.first_events(target, sizes.first_event), strict=True
        ):
            results[f"first_event_{concurrency}"] = report
        self.configure_upstream(sizes.closed_loop_tokens, sizes.closed_loop_delay_ms)
        clients, turns = sizes.closed_loop
        results["closed_loop"] = self.load(target, concurrency=clients, streams=turns, timeout=180)
        self.configure_upstream(sizes.saturation_tokens, 0)
        concurrency, streams = sizes.saturation
        results["saturation"] = self.load(
            target, concurrency=concurrency, streams=streams, timeout=180
        )
        streams, tokens = sizes.long_answers
        self.configure_upstream(tokens, 0)
        results["long_answers"] = self.load(
            target, concurrency=concurrency, streams=streams, timeout=180
        )
        self.configure_upstream(sizes.wide_tokens, sizes.delay_ms)
        results["wide"] = self.load(
            target, concurrency=sizes.wide, streams=sizes.wide, timeout=180, sample_rss=True
        )
        self.configure_upstream(1_000_000, sizes.delay_ms)
        for where, url in target.stop_urls.items():
            results[f"stop_{where}"] = self.load(
                target, concurrency=1, streams=sizes.stops, timeout=120, stop_url=url
            )
        return results

    def floor(self, database_url: str, redis_url: str) -> dict[str, Any]:
        """What a turn's storage and Redis work cost alone (bench.floor), in its own process."""
        print("measuring the floor ...", file=sys.stderr, flush=True)
        argv = [
            *(sys.executable, "-m", "bench.floor", "--database-url", database_url),
            *("--redis-url", redis_url, "--prefix", f"bench-{self.run_id}:floor:"),
            *("--turns", str(self.sizes.floor_turns)),
        ]
        output = subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout
        floor: dict[str, Any] = json.loads(output)
        return floor
