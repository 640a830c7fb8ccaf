"""What a worker costs before it serves anything, and after its first turns.

    .venv/bin/python -m bench.startup            # 5 cold starts each (medians)
    .venv/bin/python -m bench.startup --runs 1   # a quick look

Every figure is the median of `--runs` fresh processes, beside the relay
(`bench.proxy`, the lean FastAPI SSE relay the service is measured against)
started the same way:

- import: `import app.main` (`import bench.proxy`) in a fresh interpreter,
  which builds the served app as uvicorn's import of it does, seconds and peak RSS;
- start to /health: uvicorn as scripts/run starts it, on the embedded
  defaults (SQLite, in-process registry, files in a fresh data dir already
  migrated by an earlier start), from the process's start to the first 200;
- at rest: the worker's RSS once /health answers, no turn yet;
- after turns: RSS after one turn of each kind in turn (chat, deep, pptx,
  skills, host), each answered by the benchmark's fake model (the turn may
  fail on a fake answer: what is measured is what the kind loads).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from app.api.head_timeout import UVICORN_FLAGS
from bench.procs import free_port, proc_stat

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("chat", "deep", "pptx", "skills", "host")
TARGETS = {
    "import_s": ("import app.main, s", 1.0),
    "import_mb": ("import app.main, MB RSS", 100.0),
    "health_s": ("start to /health, s", 1.5),
    "rest_mb": ("at rest, MB RSS", 120.0),
}
"""Issue 43's targets: the most each figure may be."""
_MB = 1024 * 1024
_IMPORT = """
import resource, sys, time
started = time.perf_counter()
import {module}
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def imported(module: str) -> tuple[float, int]:
    """Seconds and peak bytes of importing `module` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT.format(module=module)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, peak = done.stdout.split()
    return float(seconds), int(peak)


@contextlib.contextmanager
def served(
    target: str, env: dict[str, str]
) -> Iterator[tuple[str, subprocess.Popen[bytes], float]]:
    """uvicorn serving `target`; its URL, process, and seconds from start to /health."""
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", target, "--port", str(port), *UVICORN_FLAGS]
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=ROOT, env=os.environ | env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{target} exited with {process.returncode}")
            try:
                urllib.request.urlopen(url + "/health", timeout=1).close()
                break
            except urllib.error.HTTPError:
                break  # an answer, if not a 200: it serves (the relay has no /health)
            except OSError:
                time.sleep(0.01)
        yield url, process, time.perf_counter() - started
    finally:
        process.terminate()
        process.wait(timeout=30)


def ask(url: str, kind: str) -> None:
    """One turn of `kind`, read to its end, whatever its outcome."""
    with urllib.request.urlopen(f"{url}/agent/{kind}/stream?query=hello", timeout=120) as stream:
        stream.read()


def service_env(data_dir: Path, upstream: str) -> dict[str, str]:
    return {
        "DATA_DIR": str(data_dir),
        "DATABASE_URL": f"sqlite+aiosqlite:///{data_dir}/app.db",
        "REDIS_URL": "",
        "LLM_PROVIDER": "openai",
        "LLM_BASE_URL": upstream + "/v1",
        "LLM_API_KEY": "bench-key",
        "LLM_MODEL": "bench",
        "TAVILY_API_KEY": "",
        "RECOMMENDATIONS_ENABLED": "false",
        "LOG_LEVEL": "WARNING",
        # The host agent is offered only with a remote agent; this one has no card (the fake
        # model's server), so the host answers alone, as with a remote agent that is down.
        "A2A_AGENTS": upstream,
    }


def measure(runs: int) -> dict[str, dict[str, float]]:
    """Each figure's median over `runs` cold starts, for the service and the relay."""
    return {
        name: {key: statistics.median(values) for key, values in rows.items() if values}
        for name, rows in measure_runs(runs).items()
    }


def measure_runs(runs: int) -> dict[str, dict[str, list[float]]]:
    """Every cold start's figures, for the service and the relay (`bench.run` keeps them all)."""
    figures: dict[str, dict[str, list[float]]] = {
        name: {"import_s": [], "import_mb": [], "health_s": [], "rest_mb": [], "turns_mb": []}
        for name in ("service", "relay")
    }
    # The app compiled, as scripts/run and the Dockerfile leave it, even where
    # PYTHONDONTWRITEBYTECODE keeps the measured starts from writing bytecode.
    subprocess.run([sys.executable, "-m", "compileall", "-q", "app"], cwd=ROOT, check=True)
    upstream_port = free_port()
    upstream = subprocess.Popen(
        [sys.executable, "-m", "bench.upstream", "--port", str(upstream_port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    upstream_url = f"http://127.0.0.1:{upstream_port}"
    try:
        with tempfile.TemporaryDirectory() as work:
            env = service_env(Path(work), upstream_url)
            with served("app.main:app", env):
                pass  # the first start migrates the new database: not what a restart pays
            relay_env = {"BENCH_UPSTREAM_URL": upstream_url + "/v1", "BENCH_HTTPX": "httpx2"}
            for _ in range(runs):
                for name, module, target, target_env in (
                    ("service", "app.main", "app.main:app", env),
                    ("relay", "bench.proxy", "bench.proxy:app", relay_env),
                ):
                    seconds, peak = imported(module)
                    figures[name]["import_s"].append(seconds)
                    figures[name]["import_mb"].append(peak / _MB)
                    with served(target, target_env) as (url, process, health):
                        figures[name]["health_s"].append(health)
                        figures[name]["rest_mb"].append(proc_stat(process.pid).rss_bytes / _MB)
                        if name == "service":
                            for kind in KINDS:
                                ask(url, kind)
                            figures[name]["turns_mb"].append(proc_stat(process.pid).rss_bytes / _MB)
    finally:
        upstream.terminate()
        upstream.wait(timeout=10)
    return {
        name: {key: values for key, values in rows.items() if values}
        for name, rows in figures.items()
    }


def report(figures: dict[str, dict[str, float]], runs: int) -> None:
    service, relay = figures["service"], figures["relay"]
    print(f"startup (median of {runs} cold start(s))   service    relay   ratio   target")
    for key, (label, most) in TARGETS.items():
        shape = "{:.2f}" if key.endswith("_s") else "{:.0f}"
        ours, theirs = service[key], relay[key]
        print(
            f"  {label:<34}{shape.format(ours):>9}{shape.format(theirs):>9}"
            f"{ours / theirs:>7.2f}x   <= {most:g}"
        )
    print(f"  {'after a turn of each kind, MB RSS':<34}{service['turns_mb']:>9.0f}")
    print(json.dumps(figures))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    report(measure(args.runs), args.runs)


if __name__ == "__main__":
    main()
