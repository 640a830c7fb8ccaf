"""Turn the raw results of `bench.run` into the figures table and the targets' verdicts.

Kept apart from the run so the table can be printed again from a saved
`--json` file (`python -m bench.table results.json`) and so the arithmetic
of each figure sits in one place, next to its label.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.startup import TARGETS as STARTUP_TARGETS

Result = dict[str, Any]
THROUGHPUT_TARGET = 0.7
"""The issue's target: service turns/s at saturation as a share of the proxy's."""
FLOOR_TARGETS = {"storage": 0.11, "Redis": 0.09}
"""The most of the proxy's CPU per turn a turn's storage and its Redis work may take (issue 22)."""
FIRST_EVENT_TARGET = (50, 1.5)
"""At this many concurrent streams, the most the first event's p99 may be, times the proxy's."""
BURST_RELAY = "proxy (httpx2)"
"""What the first burst is measured against: the relay on the service's own HTTP client."""
BURST_TARGET = 1.0
"""Issue 43: the first event's p99 under the first burst no later than the relay's."""
Figure = Callable[[Result, Result], tuple[float, ...] | None]
"""(the target's results, the upstream's results) -> one or two numbers, or None (n/a)."""


def _pair(report: Result | None, key: str) -> tuple[float, ...] | None:
    if report is None:
        return None
    values = report[key]
    return (values["p50"], values["p99"])


def first_event(concurrency: int) -> Figure:
    return lambda r, _: _pair(r.get(f"first_event_{concurrency}"), "first_token_ms")


def added_first_event(concurrency: int) -> Figure:
    def figure(r: Result, upstream: Result) -> tuple[float, ...] | None:
        mine, base = first_event(concurrency)(r, upstream), first_event(concurrency)(upstream, {})
        if mine is None or base is None or r is upstream:
            return None
        return tuple(m - b for m, b in zip(mine, base, strict=True))

    return figure


def turns_per_second(r: Result, _: Result) -> tuple[float, ...]:
    return (r["saturation"]["turns_per_second"],)


def long_turns_per_second(r: Result, _: Result) -> tuple[float, ...]:
    return (r["long_answers"]["turns_per_second"],)


def events_per_second(r: Result, _: Result) -> tuple[float, ...]:
    return (r["saturation"]["events_per_second"],)


def cpu_per_1000_events(r: Result, _: Result) -> tuple[float, ...]:
    sat = r["saturation"]
    return (sat["cpu_seconds"] / max(sat["events"], 1) * 1000,)


def cpu_ms_per_turn(r: Result, _: Result) -> tuple[float, ...]:
    sat = r["saturation"]
    return (sat["cpu_seconds"] / max(sat["completed"], 1) * 1000,)


def wide_completed(r: Result, _: Result) -> tuple[float, ...]:
    return (r["wide"]["completed"],)


def wide_gap(r: Result, _: Result) -> tuple[float, ...]:
    return (r["wide"]["gap_ms"]["p99"],)


def wide_gap_above_upstream(r: Result, upstream: Result) -> tuple[float, ...] | None:
    if r is upstream:
        return None
    return (r["wide"]["gap_ms"]["p99"] - upstream["wide"]["gap_ms"]["p99"],)


def wide_first_event(r: Result, _: Result) -> tuple[float, ...] | None:
    return _pair(r["wide"], "first_token_ms")


def memory_per_stream(r: Result, _: Result) -> tuple[float, ...]:
    wide = r["wide"]
    return ((wide["rss_peak"] - wide["rss_before"]) / max(wide["streams"], 1) / 1024,)


def stop(where: str) -> Figure:
    return lambda r, _: _pair(r.get(f"stop_{where}"), "stop_ms")


def statements_per_turn(r: Result, _: Result) -> tuple[float, ...] | None:
    sat = r["saturation"]
    counts = sat.get("statements")
    if counts is None:
        return None
    turns = max(sum(sat["statuses"].values()), 1)
    # `WITH` is the question's INSERT with the memory read beside it (PostgreSQL): a write.
    writes = sum(counts.get(verb, 0) for verb in ("INSERT", "UPDATE", "DELETE", "WITH"))
    return (writes / turns, (sum(counts.values()) - writes) / turns)


def first_burst(r: Result, _: Result) -> tuple[float, ...] | None:
    burst = r.get("burst")
    return None if burst is None else (burst["p50"], burst["p99"])


def startup_figure(*keys: str) -> Figure:
    def figure(r: Result, _: Result) -> tuple[float, ...] | None:
        measured = r.get("startup")
        if measured is None or any(key not in measured for key in keys):
            return None
        return tuple(measured[key] for key in keys)

    return figure


def burst_summary(burst: Result) -> dict[str, dict[str, float]]:
    """Each target's median p50 and p99 over the rounds of the first burst."""
    names = {name for figures in burst["rounds"] for name in figures}
    out: dict[str, dict[str, float]] = {}
    for name in names:
        rows = [figures[name] for figures in burst["rounds"] if name in figures]
        out[name] = {
            "p50": statistics.median(row["p50"] for row in rows),
            "p99": statistics.median(row["p99"] for row in rows),
            "rounds": len(rows),
        }
    return out


def burst_lines(summary: dict[str, dict[str, float]]) -> list[str]:
    """The burst's medians, and each service's p99 against the relay's."""
    relay = summary.get(BURST_RELAY)
    out = []
    for name, row in sorted(summary.items()):
        line = (
            f"first burst, {name}: p50 / p99 {_fmt(row['p50'])} / {_fmt(row['p99'])} ms"
            f" (median of {row['rounds']:.0f} rounds)"
        )
        if relay is not None and name != BURST_RELAY and relay["p99"]:
            ratio = row["p99"] / relay["p99"]
            verdict = "PASS" if at_most(BURST_TARGET)(ratio) else "MISS"
            line += f"; p99 {ratio:.2f} x {BURST_RELAY} (target <= {BURST_TARGET}): {verdict}"
        out.append(line)
    return out


def attach_burst(results: Result) -> None:
    """Each measured column gets its burst medians, for the table's row."""
    for name, row in burst_summary(results["burst"]).items():
        if name in results["targets"]:
            results["targets"][name]["burst"] = row


def attach_startup(results: Result) -> None:
    """The start-up is measured on the embedded defaults, beside the relay on httpx2."""
    measured = results["startup"]
    for name, key in (("service (embedded)", "service"), (BURST_RELAY, "relay")):
        if name in results["targets"]:
            results["targets"][name]["startup"] = measured[key]


def figures(sizes: Result) -> list[tuple[str, Figure]]:
    rows: list[tuple[str, Figure]] = []
    wide = sizes["wide"]
    for concurrency, _ in sizes["first_event"]:
        label = f"first event, {concurrency} concurrent: p50 / p99 ms"
        rows.append((label, first_event(concurrency)))
        rows.append(("  added to the upstream's: p50 / p99 ms", added_first_event(concurrency)))
    rows += [
        ("saturation (no delay): turns/s", turns_per_second),
        ("  events/s", events_per_second),
        ("  server CPU s per 1,000 events", cpu_per_1000_events),
        ("  server CPU ms per turn", cpu_ms_per_turn),
        (
            f"saturation, {sizes['long_answers'][1]}-token answers: turns/s",
            long_turns_per_second,
        ),
        (f"{wide} streams, {sizes['delay_ms']:g} ms/token: completed", wide_completed),
        ("  first event p50 / p99 ms", wide_first_event),
        ("  p99 gap between events ms", wide_gap),
        ("  p99 gap above the upstream's ms", wide_gap_above_upstream),
        ("  memory per open stream KiB", memory_per_stream),
        ("stop to complete, same instance: p50 / p99 ms", stop("same")),
        ("stop to complete, across instances: p50 / p99 ms", stop("across")),
        ("SQL statements per turn: writes / reads", statements_per_turn),
        ("first burst, fresh server, median of the rounds: p50 / p99 ms", first_burst),
        ("start-up: import app.main s / MB peak RSS", startup_figure("import_s", "import_mb")),
        ("  start to /health s", startup_figure("health_s")),
        ("  at rest MB RSS", startup_figure("rest_mb")),
        ("  after a turn of each kind MB RSS", startup_figure("turns_mb")),
    ]
    return rows


def _fmt(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _cell(values: tuple[float, ...] | None) -> str:
    return "—" if values is None else " / ".join(_fmt(v) for v in values)


def _ratio(values: tuple[float, ...] | None, base: tuple[float, ...] | None) -> str:
    if values is None or base is None:
        return "—"
    return " / ".join(f"{v / b:.2f}" if b else "—" for v, b in zip(values, base, strict=True))


def yardstick(name: str, clients: dict[str, str]) -> str | None:
    """The proxy a service column is compared with: the one on the same HTTP client.

    None for the upstream and the proxies themselves, and when no such proxy ran.
    """
    if name.startswith("proxy") or name not in clients:
        return None
    for candidate, client in clients.items():
        if candidate.startswith("proxy") and client == clients[name]:
            return candidate
    return None


def render(results: Result) -> str:
    targets: dict[str, Result] = results["targets"]
    upstream = targets["upstream"]
    header = ["figure"]
    for name in targets:
        header.append(name)
        base = yardstick(name, results["clients"])
        if base is not None:
            header.append(f"× {base}")
    lines = [header, ["---"] * len(header)]
    for label, figure in figures(results["sizes"]):
        row = [label]
        for name, result in targets.items():
            values = _safe(figure, result, upstream)
            row.append(_cell(values))
            base = yardstick(name, results["clients"])
            if base is not None:
                row.append(_ratio(values, _safe(figure, targets[base], upstream)))
        lines.append(row)
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def _safe(figure: Figure, result: Result, upstream: Result) -> tuple[float, ...] | None:
    try:
        return figure(result, upstream)
    except KeyError:
        return None


def at_most(limit: float) -> Callable[[float], bool]:
    return lambda value: value <= limit


def verdicts(results: Result) -> list[str]:
    """The issue's targets, checked for each service column."""
    targets: dict[str, Result] = results["targets"]
    upstream = targets["upstream"]
    wide = results["sizes"]["wide"]
    concurrency, most = FIRST_EVENT_TARGET
    first = first_event(concurrency)
    out: list[str] = []
    for name, r in targets.items():
        base = yardstick(name, results["clients"])
        if base is None:
            continue
        checks: list[tuple[str, float, Callable[[float], bool]]] = [
            (
                f"throughput >= {THROUGHPUT_TARGET} x {base}",
                turns_per_second(r, upstream)[0] / turns_per_second(targets[base], upstream)[0],
                lambda v: v >= THROUGHPUT_TARGET,
            ),
            (
                "added p50 first event at 1 stream < 15 ms",
                (_safe(added_first_event(1), r, upstream) or (float("nan"),))[0],
                lambda v: v < 15,
            ),
            (
                f"all {wide} streams complete",
                wide_completed(r, upstream)[0],
                lambda v: v == wide,
            ),
            (
                "p99 gap < upstream's + 100 ms",
                (wide_gap_above_upstream(r, upstream) or (float("nan"),))[0],
                lambda v: v < 100,
            ),
            (
                "memory per open stream < 100 KiB",
                memory_per_stream(r, upstream)[0],
                lambda v: v < 100,
            ),
        ]
        mine, theirs = first(r, upstream), first(targets[base], upstream)
        if mine is not None and theirs is not None:
            checks.append(
                (
                    f"first event p99 at {concurrency} concurrent <= {most} x {base}",
                    mine[1] / theirs[1],
                    lambda v: v <= most,
                )
            )
        across = _safe(stop("across"), r, upstream)
        if across is not None:
            checks.append(("stop p99 across instances < 250 ms", across[1], lambda v: v < 250))
        statements = _safe(statements_per_turn, r, upstream)
        if statements is not None:
            checks.append(("2 writes per turn", statements[0], lambda v: v <= 2.0))
        burst, relay = first_burst(r, upstream), first_burst(targets[base], upstream)
        if burst is not None and relay is not None and relay[1]:
            rounds = r["burst"]["rounds"]
            checks.append(
                (
                    f"first burst p99, median of {rounds:.0f} rounds, <= {BURST_TARGET} x {base}",
                    burst[1] / relay[1],
                    at_most(BURST_TARGET),
                )
            )
        measured = r.get("startup", {})
        for key, (label, limit) in STARTUP_TARGETS.items():
            if key in measured:
                checks.append((f"{label} <= {limit:g}", measured[key], at_most(limit)))
        for label, value, ok in checks:
            out.append(f"{name}: {label}: {_fmt(value)} {'PASS' if ok(value) else 'MISS'}")
    return out


def floor_lines(results: Result) -> list[str]:
    """The floor (bench.floor) set against the proxy: the best ratio this contract allows.

    At saturation each server spends its one core, so throughput is the inverse
    of CPU per turn. A service that did nothing but relay like the proxy plus
    its storage and Redis work could reach at most proxy / (proxy + floor).
    Redis's part is what it adds to the same turn on the in-process registry.
    """
    floor = results.get("floor")
    targets: dict[str, Result] = results["targets"]
    base = yardstick("service", results["clients"])
    if floor is None or base is None or base not in targets:
        return []
    proxy = cpu_ms_per_turn(targets[base], {})[0]
    store, redis = floor["store_cpu_ms"], floor["redis_cpu_ms"]
    cost = f"floor: storage {_fmt(store)} ms + Redis {_fmt(redis)} ms (over in-process) of CPU"
    if proxy <= 0:
        # A run too short for one clock tick of the proxy's CPU has no base to share.
        return [f"{cost} per turn; {base} used no measurable CPU, so no shares"]
    return [
        f"{cost} per turn; {base} {_fmt(proxy)} ms per turn, so {THROUGHPUT_TARGET} x {base}"
        f" leaves {_fmt(proxy / THROUGHPUT_TARGET - proxy)} ms for all the service adds",
        f"floor: best ratio possible with storage alone {proxy / (proxy + store):.2f},"
        f" with storage and Redis {proxy / (proxy + store + redis):.2f}",
        *(
            f"floor: {part} {share:.3f} of {base}'s CPU per turn (target <= {target}):"
            f" {'PASS' if share <= target else 'MISS'}"
            for part, cost in (("storage", store), ("Redis", redis))
            for target, share in [(FLOOR_TARGETS[part], cost / proxy)]
        ),
    ]


def print_report(results: Result) -> None:
    print(render(results))
    for line in floor_lines(results):
        print(line)
    print()
    for line in verdicts(results):
        print(line)
    print(f"\ntracebacks in the servers' logs: {results.get('tracebacks', 0)}")


def main() -> None:
    results = json.loads(Path(sys.argv[1]).read_text())
    print_report(results)


if __name__ == "__main__":
    main()
