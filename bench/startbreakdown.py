"""Where a turn's start waits at 50 concurrent: its stages, read from the service's own spans.

    .venv/bin/python -m bench.startbreakdown           # issue 59's load: 50 clients, 2,000 turns
    .venv/bin/python -m bench.startbreakdown --quick   # tiny sizes: checks that it runs

The service traces itself (app/telemetry): the request, the claim (Redis),
each SQL statement, the run, the model call and its time to the first chunk.
Here it runs with those spans kept in its memory (`BENCH_SPANS=1`,
bench/spans.py, which also marks the model request's connect, send and
response head), under issue 59's load (bench.run's closed loop: each client
runs turns back to back, 20 chunks 2 ms apart), each client on a
conversation of its own, so every turn after a client's first reads its
memory. The load generator sends each stream's own `traceparent` and notes
its send and first `text` on the wall clock, the clock spans are stamped
with, so each turn's spans and its client's view join into one timeline:

    request in           the client's send to the app's request span (uvicorn read it)
    checks               to the claim or the turn's read, whichever starts first: auth,
                         the request's own checks, the agent
    claim                the claim's round trip (Redis; in-process it is not traced)
    turn read            the turn's one read before anything is written: its project
                         and the user's memory (`for_turn`), beside the claim
    waiting to start     the later of the claim and the read to the question's row: the
                         request's other checks, the start limit (`MAX_STARTING_TURNS`)
                         and the agent's set-up
    question row         the question's INSERT (on PostgreSQL with the turns above read
                         in it)
    history read         SQLite's own SELECT of the turns above, after the INSERT
    launch, to the model the row stored (a first question's run launches as its row is
                         written: from then) to the model call's start: the run
                         launched, its task scheduled, the prompt built
    model connect        the model call's start to its request going out: the pool,
                         and a TCP connect when the pool opens a connection
    first model byte     the request out to the response's head in (the fake model
                         sends its head and first chunk in one write)
    first chunk read     the response's head to the first chunk parsed
    to the client        the first chunk to the client's first `text`: into the run's
                         log, the SSE writer woken, the bytes sent and read

Each stage's p50 and p99 is over all turns, so they do not add up to the
first token's. Tracing costs some CPU of its own (bench/README.md, "What
tracing costs"), so the totals here run above bench.run's; the typical
proxy's first token under the same load is printed for scale.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.harness import FULL, QUICK, Bench, Sizes, Target
from bench.loadgen import percentiles
from bench.procs import raise_open_files_limit
from bench.servers import DEFAULT_REDIS_URL, delete_redis_keys, postgres
from bench.table import TYPICAL

COLUMNS = (TYPICAL, "service", "service (embedded)")
STAGES = (
    "request in",
    "checks",
    "claim",
    "turn read",
    "waiting to start",
    "question row",
    "history read",
    "launch, to the model",
    "model connect",
    "first model byte",
    "first chunk read",
    "to the client",
)
PER_CLIENT = "/agent/chat/stream?query=hi&conversationId={run}-c{client}"
"""Each client on its own conversation, so each of its turns after the first reads memory."""
SPANS_WAIT_SECONDS = 15.0
"""How long the last runs' spans may take to end after their streams did."""
Span = dict[str, Any]


def turn_stages(spans: list[Span], sent: float, first_token: float) -> dict[str, float]:
    """One turn's stages in seconds, from its spans and its client's wall-clock times.

    A stage whose spans are missing is left out (the claim in-process, the history
    read on PostgreSQL or on a conversation's first turn).
    """
    ids = {span["id"] for span in spans}
    request = next(span for span in spans if span["parent"] not in ids)
    run = next(span for span in spans if span["name"].startswith("invoke_agent "))
    starting = sorted((s for s in spans if s["parent"] == request["id"]), key=lambda s: s["start"])
    claim = next((s for s in starting if s["name"] == "tasks.claim"), None)
    question = next(s for s in starting if s["name"] in ("INSERT", "WITH"))
    read = next(s for s in starting if s["name"] == "SELECT" and s["start"] < question["start"])
    history = next(
        (s for s in starting if s["name"] == "SELECT" and s["start"] >= question["start"]), None
    )
    chat = min(
        (s for s in spans if s["name"].startswith("chat ") and s["parent"] == run["id"]),
        key=lambda s: s["start"],
    )
    events: dict[str, int] = {}
    for name, at in run["events"]:
        events.setdefault(name, at)
    sent_ns, first_ns = sent * 1e9, first_token * 1e9
    stored = max(question["end"], history["end"] if history else 0)
    first_chunk = chat["start"] + chat["attributes"]["gen_ai.response.time_to_first_chunk"] * 1e9
    begun = [read] if claim is None else [read, claim]
    marks = {
        "request in": (sent_ns, request["start"]),
        "checks": (request["start"], min(s["start"] for s in begun)),
        "turn read": (read["start"], read["end"]),
        "waiting to start": (max(s["end"] for s in begun), question["start"]),
        "question row": (question["start"], question["end"]),
        "launch, to the model": (min(stored, run["start"]), chat["start"]),
        "to the client": (first_chunk, first_ns),
    }
    if claim is not None:
        marks["claim"] = (claim["start"], claim["end"])
    if history is not None:
        marks["history read"] = (history["start"], history["end"])
    sending = events.get("http11.send_request_headers.started")
    head = events.get("http11.receive_response_headers.complete")
    if sending is not None and head is not None:
        marks["model connect"] = (chat["start"], sending)
        marks["first model byte"] = (sending, head)
        marks["first chunk read"] = (head, first_chunk)
    return {stage: (end - start) / 1e9 for stage, (start, end) in marks.items()}


def breakdown(spans: Iterable[Span], timings: Iterable[list[float]]) -> dict[str, Any]:
    """Each stage's p50 and p99 (ms) over the turns whose spans and timings joined.

    `timings` are the load generator's (stream number, sent, first `text`); the
    stream's spans carry trace id number + 1 (its `traceparent`).
    """
    traces: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        traces[span["trace"]].append(span)
    samples: dict[str, list[float]] = defaultdict(list)
    joined = connects = 0
    for index, sent, first_token in timings:
        turn = traces.get(f"{int(index) + 1:032x}", [])
        if not any(span["name"].startswith("invoke_agent ") for span in turn):
            continue
        joined += 1
        for stage, seconds in turn_stages(turn, sent, first_token).items():
            samples[stage].append(seconds)
        connects += any(
            name == "connection.connect_tcp.complete" for span in turn for name, _ in span["events"]
        )
    return {
        "turns": joined,
        "model_connects": connects,
        "stages": {stage: percentiles(samples[stage]) for stage in STAGES if samples[stage]},
    }


def measure(
    sizes: Sizes,
    *,
    only: tuple[str, ...] = COLUMNS,
    postgres_url: str | None = None,
    redis_url: str = DEFAULT_REDIS_URL,
) -> dict[str, Any]:
    """Each column under the closed loop; the services' stages from their spans."""
    clients, turns = sizes.closed_loop
    results: dict[str, Any] = {"clients": clients, "turns": turns, "columns": {}}
    with tempfile.TemporaryDirectory(prefix="dodo-startbreakdown-") as tmp:
        bench = Bench(sizes, Path(tmp))
        try:
            with postgres(bench.run_id, postgres_url) as database_url:
                bench.start_upstream()
                for name in only:
                    with bench.alone():
                        target = _start(bench, name, database_url, redis_url)
                        results["columns"][name] = _measure(bench, target)
        finally:
            bench.stop()
            delete_redis_keys(redis_url, f"bench-{bench.run_id}:")
    return results


def _start(bench: Bench, name: str, database_url: str, redis_url: str) -> Target:
    if name == TYPICAL:
        return bench.start_typical_proxy(name)
    traced = {"BENCH_SPANS": "1"}
    if name == "service":
        return bench.start_service(
            name, database_url, redis_url, "httpx2", extra_env=traced, across=False
        )
    sqlite_url = f"sqlite+aiosqlite:///{bench.workdir}/embedded.db"
    return bench.start_service(name, sqlite_url, "", "httpx2", extra_env=traced)


def _measure(bench: Bench, target: Target) -> dict[str, Any]:
    sizes = bench.sizes
    traced = target.kind == "service"
    bench.warm_up(target)
    if traced:
        _take_spans(target)  # the warm-up's
    bench.configure_upstream(sizes.closed_loop_tokens, sizes.closed_loop_delay_ms)
    clients, turns = sizes.closed_loop
    options = ["--timings", "--traceparent", "--path", PER_CLIENT] if traced else []
    report = bench.load(target, concurrency=clients, streams=turns, timeout=180, options=options)
    out: dict[str, Any] = {
        "first_token_ms": report["first_token_ms"],
        "turns_per_second": report["turns_per_second"],
        "completed": report["completed"],
        "streams": report["streams"],
    }
    if traced:
        out |= breakdown(_spans_of(target, len(report["timings"])), report["timings"])
    return out


def _take_spans(target: Target) -> list[Span]:
    with urllib.request.urlopen(target.url + "/_bench/spans", timeout=30) as response:
        spans: list[Span] = json.loads(response.read())
    return spans


def _spans_of(target: Target, turns: int) -> list[Span]:
    """Every span of the load, once the runs of its `turns` have all ended."""
    spans: list[Span] = []
    deadline = time.monotonic() + SPANS_WAIT_SECONDS
    while True:
        spans += _take_spans(target)
        runs = sum(span["name"].startswith("invoke_agent ") for span in spans)
        if runs >= turns or time.monotonic() > deadline:
            return spans
        time.sleep(0.2)


def render(results: dict[str, Any]) -> str:
    columns: dict[str, Any] = results["columns"]
    traced = [name for name, column in columns.items() if "stages" in column]
    lines = [
        f"closed loop: {results['clients']} clients, {results['turns']} turns;"
        " each stage's p50 / p99 in ms over all turns (they do not add up)",
        "",
        "| stage | " + " | ".join(traced) + " |",
        "| --- |" + " --- |" * len(traced),
    ]
    for stage in STAGES:
        cells = [_pair(columns[name]["stages"].get(stage)) for name in traced]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    cells = [_pair(columns[name]["first_token_ms"]) for name in traced]
    lines.append("| first token, at the client | " + " | ".join(cells) + " |")
    cells = [f"{columns[name]['model_connects']} of {columns[name]['turns']}" for name in traced]
    lines.append("| turns that opened a model connection | " + " | ".join(cells) + " |")
    lines.append("")
    for name, column in columns.items():
        lines.append(
            f"{name}: first token p50 / p99 {_pair(column['first_token_ms'])} ms,"
            f" {column['turns_per_second']:.0f} turns/s,"
            f" {column['completed']} of {column['streams']} completed"
        )
    return "\n".join(lines)


def _pair(figures: dict[str, float] | None) -> str:
    return "—" if figures is None else f"{figures['p50']:.1f} / {figures['p99']:.1f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a smoke test")
    parser.add_argument(
        "--only", default=",".join(COLUMNS), help=f"comma-separated, of: {', '.join(COLUMNS)}"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    raise_open_files_limit()
    results = measure(
        QUICK if args.quick else FULL,
        only=tuple(name for name in COLUMNS if name in args.only.split(",")),
        postgres_url=os.environ.get("BENCH_POSTGRES_URL"),
        redis_url=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
    )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    print(render(results))


if __name__ == "__main__":
    main()
