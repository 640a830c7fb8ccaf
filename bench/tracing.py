"""What tracing costs: the service's CPU per turn with tracing off, on, and before it existed.

    .venv/bin/python -m bench.tracing                       # off and on, SQLite
    .venv/bin/python -m bench.tracing --baseline 0a69550    # and the code before telemetry
    .venv/bin/python -m bench.tracing --backend postgres    # a private PostgreSQL, and Redis

Each variant is a one-worker service process of its own (`bench/tracing_server.py`),
all of them up side by side, each on a fresh database. After a warm-up, every
variant answers `--turns` whole chat turns (one model call each, from
`bench/upstream.py`, 20 tokens) from `--concurrency` clients, in batches of
`--batch` that go to the variants in turn, so whatever else the machine does at
any moment weighs on each alike. The figure is each process's own CPU time (user
+ system, from /proc) over its batches, per turn: on a busy shared machine wall
time moves with the neighbours, CPU time far less. `--baseline REV` unpacks that
commit (`git archive`) and serves its `app` with the same
launcher: the cost of the hooks themselves, with tracing off.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.procs import free_port, proc_stat
from bench.servers import DEFAULT_REDIS_URL, delete_redis_keys, postgres

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "bench" / "tracing_server.py"
START_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    tree: Path
    """Where `app` is imported from."""
    tracing: str
    """`on` or `off`, as the launcher takes it."""


@dataclass(frozen=True, slots=True)
class Backend:
    database_url: str
    redis_url: str
    prefix: str


@dataclass(frozen=True, slots=True)
class Options:
    turns: int = 300
    warmup: int = 40
    concurrency: int = 4
    batch: int = 20
    """Turns a variant answers in a row before the next one's."""
    repetitions: int = 5
    baseline: str | None = None
    """A commit to measure too, with tracing off."""
    backend: str = "sqlite"
    """`sqlite` (a fresh file per service) or `postgres` (a private server, and Redis)."""


def main() -> None:
    defaults = Options()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=defaults.turns)
    parser.add_argument("--warmup", type=int, default=defaults.warmup)
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency)
    parser.add_argument("--batch", type=int, default=defaults.batch)
    parser.add_argument("--repetitions", type=int, default=defaults.repetitions)
    parser.add_argument("--baseline", help="a commit to measure too, with tracing off")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default=defaults.backend)
    options = Options(**vars(parser.parse_args()))
    print_report(measure(options), options)


def measure(options: Options) -> dict[str, list[float]]:
    """Each variant's CPU milliseconds per turn, one figure per repetition."""
    with contextlib.ExitStack() as stack:
        variants = [Variant("off", ROOT, "off"), Variant("on", ROOT, "on")]
        if options.baseline:
            tree = stack.enter_context(_unpacked(options.baseline))
            variants.insert(0, Variant(f"baseline ({options.baseline})", tree, "off"))
        upstream = stack.enter_context(_upstream())
        run_id = uuid.uuid4().hex[:8]
        backend = Backend("", "", "")
        if options.backend == "postgres":
            redis_url = os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL)
            database = stack.enter_context(postgres(run_id, os.environ.get("BENCH_POSTGRES_URL")))
            prefix = f"dodo-bench-{run_id}:"
            stack.callback(delete_redis_keys, redis_url, prefix)
            backend = Backend(database, redis_url, prefix)
        figures: dict[str, list[float]] = {v.name: [] for v in variants}
        for rep in range(options.repetitions):
            for name, ms in _repetition(variants, upstream, backend, options).items():
                figures[name].append(ms)
                print(f"rep {rep + 1} {name}: {ms:.2f} ms CPU per turn", flush=True)
    return figures


def print_report(figures: dict[str, list[float]], options: Options) -> None:
    print(
        f"\n{options.backend}, {options.turns} turns x {options.repetitions} repetitions,"
        f" concurrency {options.concurrency}: server CPU ms per turn"
    )
    print("| variant | median | min | max | each run |")
    print("| --- | --- | --- | --- | --- |")
    for name, values in figures.items():
        each = ", ".join(f"{v:.2f}" for v in values)
        print(
            f"| {name} | {statistics.median(values):.2f} | {min(values):.2f}"
            f" | {max(values):.2f} | {each} |"
        )
    print()
    _ratio("on", "off", figures)
    for name in figures:
        if name.startswith("baseline"):
            _ratio("off", name, figures)


def _ratio(a: str, b: str, figures: dict[str, list[float]]) -> None:
    """`a / b`, of the medians and, paired, each repetition's (measured side by side)."""
    paired = [x / y for x, y in zip(figures[a], figures[b], strict=True)]
    print(
        f"{a} / {b}: {statistics.median(figures[a]) / statistics.median(figures[b]):.3f}"
        f" (medians); per repetition {', '.join(f'{r:.3f}' for r in paired)},"
        f" median {statistics.median(paired):.3f}"
    )


def _repetition(
    variants: list[Variant], upstream: str, backend: Backend, options: Options
) -> dict[str, float]:
    """Every variant's CPU milliseconds per turn, their services up side by side.

    The turns go to the variants in small batches, in turn, so that whatever
    else the machine does at any moment weighs on each of them alike.
    """
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(_service(v, upstream, backend)) for v in variants]
        for base_url, _ in servers:
            asyncio.run(_turns(base_url, options.warmup, options.concurrency))
        used = [0.0] * len(servers)
        for batch in range(0, options.turns, options.batch):
            size = min(options.batch, options.turns - batch)
            for index, (base_url, pid) in enumerate(servers):
                before = proc_stat(pid).cpu_seconds
                asyncio.run(_turns(base_url, size, options.concurrency))
                used[index] += proc_stat(pid).cpu_seconds - before
    return {v.name: cpu * 1000 / options.turns for v, cpu in zip(variants, used, strict=True)}


@contextlib.contextmanager
def _service(variant: Variant, upstream: str, backend: Backend) -> Iterator[tuple[str, int]]:
    """The variant's service on a fresh data folder; yields its URL and process id."""
    with tempfile.TemporaryDirectory(prefix="dodo-bench-tracing-") as data:
        database_url = backend.database_url or f"sqlite+aiosqlite:///{data}/app.db"
        port = free_port()
        argv = [
            sys.executable,
            str(LAUNCHER),
            *(variant.tracing, str(port), upstream, database_url),
            *(backend.redis_url, backend.prefix, data),
        ]
        env = {**os.environ, "PYTHONPATH": str(variant.tree)}
        with subprocess.Popen(argv, cwd=variant.tree, env=env) as server:
            try:
                base_url = f"http://127.0.0.1:{port}"
                _wait_up(base_url, server)
                yield base_url, server.pid
            finally:
                server.terminate()
                server.wait(30)


async def _turns(base_url: str, count: int, concurrency: int) -> None:
    """`count` whole chat turns, each on a conversation of its own; every one must complete."""
    remaining = iter(range(count))

    async def client() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
            for _ in remaining:
                params = {"query": "How are you?", "conversationId": uuid.uuid4().hex}
                async with http.stream("GET", "/agent/chat/stream", params=params) as response:
                    body = b"".join([chunk async for chunk in response.aiter_bytes()])
                if b'"status":"completed"' not in body:
                    raise RuntimeError(f"a turn did not complete: {body[-300:]!r}")

    await asyncio.gather(*(client() for _ in range(concurrency)))


def _wait_up(base_url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("the service exited at start-up")
        with contextlib.suppress(OSError):
            urllib.request.urlopen(f"{base_url}/health", timeout=1).close()
            return
        time.sleep(0.2)
    raise RuntimeError(f"the service did not start within {START_SECONDS:.0f} s")


@contextlib.contextmanager
def _upstream() -> Iterator[str]:
    """The fake model, streaming 20 tokens at once; yields its OpenAI-style base URL."""
    port = free_port()
    argv = [sys.executable, "-m", "bench.upstream", "--port", str(port)]
    with subprocess.Popen(argv, cwd=ROOT) as proc:
        try:
            _wait_listening(port, proc)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            proc.terminate()
            proc.wait(30)


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the upstream exited at start-up")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.1)
    raise RuntimeError("the upstream did not start")


@contextlib.contextmanager
def _unpacked(revision: str) -> Iterator[Path]:
    """The tree of `revision`, unpacked into a temporary folder (no checkout, no worktree)."""
    with tempfile.TemporaryDirectory(prefix="dodo-bench-baseline-") as folder:
        archive = subprocess.run(
            ["git", "archive", revision], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        yield Path(folder)


if __name__ == "__main__":
    main()
