"""What the AG-UI and AI SDK adapters cost: the service's CPU per turn in each wire format.

    .venv/bin/python -m bench.formats                       # 20- and 200-token answers
    .venv/bin/python -m bench.formats --rounds 3 --turns 50  # a quick look

One service process (the benchmark's, `bench.service`, on the embedded
defaults unless `--database-url` / `--redis-url` say otherwise) and the
benchmark's fake upstream; the same chat turns are asked in our own format
(`/agent/chat/stream`), over AG-UI (`/ag-ui/chat`) and as an AI SDK stream
(`/ai-sdk/chat`), in batches that alternate format round after round, so the
machine's drift falls on all three alike. A batch's figure is the server
process's user + system time (`/proc/<pid>/stat`) over the batch, per turn;
the client runs here, so its work is not in it. Printed: each format's median
over the rounds, and the median of its per-round ratio to our own format's (the
target: within 1.10).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.harness import QUICK, Bench
from bench.procs import proc_stat

Request = Callable[[str], tuple[str, dict[str, Any]]]


def ours(conversation: str) -> tuple[str, dict[str, Any]]:
    return "/agent/chat/stream", {"query": "Say something", "conversationId": conversation}


def ag_ui(conversation: str) -> tuple[str, dict[str, Any]]:
    message = {"id": "u1", "role": "user", "content": "Say something"}
    return "/ag-ui/chat", {"threadId": conversation, "runId": "r1", "messages": [message]}


def ai_sdk(conversation: str) -> tuple[str, dict[str, Any]]:
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Say something"}]}
    return "/ai-sdk/chat", {"id": conversation, "messages": [message], "trigger": "submit-message"}


FORMATS: dict[str, tuple[Request, bytes]] = {
    "ours": (ours, b'"type":"complete"'),
    "ag-ui": (ag_ui, b'"type":"RUN_FINISHED"'),
    "ai-sdk": (ai_sdk, b"data: [DONE]"),
}
"""Each format's request, and what its stream's end holds when the turn completed."""


async def batch(url: str, request: Request, end: bytes, turns: int, concurrency: int) -> None:
    """`turns` whole turns, `concurrency` at a time, each on a new conversation."""
    left = iter(range(turns))

    async def client(http: httpx.AsyncClient) -> None:
        for _ in left:
            path, body = request(uuid.uuid4().hex)
            response = await http.post(path, json=body)
            if response.status_code != 200 or end not in response.content[-1000:]:
                raise RuntimeError(f"{path}: {response.status_code} {response.content[-1000:]!r}")

    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        await asyncio.gather(*(client(http) for _ in range(concurrency)))


def measure(
    url: str, pid: int, rounds: int, turns: int, concurrency: int
) -> dict[str, list[float]]:
    """CPU ms per turn of every batch, by format; the order of formats rotates each round."""
    names = list(FORMATS)
    figures: dict[str, list[float]] = {name: [] for name in names}
    asyncio.run(batch(url, ours, FORMATS["ours"][1], concurrency, concurrency))  # warm up
    for round_ in range(rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            request, end = FORMATS[name]
            before = proc_stat(pid).cpu_seconds
            asyncio.run(batch(url, request, end, turns, concurrency))
            figures[name].append((proc_stat(pid).cpu_seconds - before) * 1000 / turns)
    return figures


def report(tokens: int, figures: dict[str, list[float]]) -> None:
    """Each round's figures, their median, and the median of the per-round ratios to ours:
    a round's batches run minutes apart at most, so the ratio cancels most of the drift."""
    base = figures["ours"]
    print(f"\n{tokens}-token answers: server CPU ms per turn, each round, then the medians")
    for name, values in figures.items():
        # The kernel counts CPU in 10 ms ticks: a tiny batch (the smoke test's) can read
        # 0 for ours, and a round without a base has no ratio.
        ratios = [v / b for v, b in zip(values, base, strict=True) if b > 0]
        ratio = f"{statistics.median(ratios):.3f}" if ratios else "n/a"
        rounds = " ".join(f"{v:.2f}" for v in values)
        print(f"  {name:7} {rounds}  | median {statistics.median(values):.2f}  x ours {ratio}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--turns", type=int, default=200, help="turns per batch")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--tokens", default="20,200", help="answer lengths, comma-separated")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--redis-url", default="")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dodo-bench-formats-") as tmp:
        bench = Bench(QUICK, Path(tmp))
        try:
            bench.start_upstream()
            database_url = args.database_url or f"sqlite+aiosqlite:///{tmp}/formats.db"
            target = bench.start_service("service", database_url, args.redis_url, "httpx2")
            for tokens in (int(t) for t in args.tokens.split(",")):
                bench.configure_upstream(tokens, 0)
                figures = measure(target.url, target.pid, args.rounds, args.turns, args.concurrency)
                report(tokens, figures)
        finally:
            bench.stop()


if __name__ == "__main__":
    main()
