"""Turn the raw results of `bench.run` into the figures table and the targets' verdicts.

Kept apart from the run so the table can be printed again from a saved
`--json` file (`python -m bench.table results.json`) and so the arithmetic
of each figure sits in one place, next to its label. Each figure is the
median of its samples (the run's repetitions; the first burst's rounds; the
cold starts) with their spread (min-max); each target is judged on the
median. `python -m bench.table a.json b.json --agree` says, figure by figure,
whether two runs agree: each one's median within the other's spread; beside
the count, how many two runs with nothing different between them would agree
on by chance alone, the targets whose verdict differs between the two, and
whether the two are as alike as two runs of the same code (`alike`, judged on
the ratios of each repetition, whose spreads must overlap as often as chance
gives: `ratio_overlap`).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
TYPICAL = "typical proxy"
"""Issue 59's yardstick (bench/typical_proxy.py): the service's first token is held to it."""
TYPICAL_TARGET = 1.3
"""Issue 59: the first token's p50 under the closed loop at most this many times the typical's."""
Values = tuple[float, ...]
Figure = Callable[[Result, Result], Values | None]
"""(the target's results, the upstream's results), of one repetition -> one or two
numbers, or None (n/a)."""
Sampler = Callable[[Result, str], list[Values]]
"""(a run's results, a column) -> every sample of one figure for that column."""


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


def closed_loop_first_token(r: Result, _: Result) -> tuple[float, ...] | None:
    return _pair(r.get("closed_loop"), "first_token_ms")


def closed_loop_turns(r: Result, _: Result) -> tuple[float, ...]:
    return (r["closed_loop"]["turns_per_second"],)


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


def per_rep(figure: Figure) -> Sampler:
    """The figure in each repetition that measured the column, against its upstream there."""

    def sampler(results: Result, name: str) -> list[Values]:
        samples = []
        for rep in results["reps"]:
            if name in rep:
                values = _safe(figure, rep[name], rep["upstream"])
                if values is not None:
                    samples.append(values)
        return samples

    return sampler


def burst_rounds(results: Result, name: str) -> list[Values]:
    """Each round's first burst p50 and p99 (bench.burst): a fresh server each round."""
    burst = results.get("burst")
    if burst is None:
        return []
    return [(r[name]["p50"], r[name]["p99"]) for r in burst["rounds"] if name in r]


STARTUP_COLUMNS = {"service (embedded)": "service", BURST_RELAY: "relay"}
"""The start-up is measured on the embedded defaults, beside the relay on httpx2."""


def startup_runs(*keys: str) -> Sampler:
    """Each cold start's figures (bench.startup)."""

    def sampler(results: Result, name: str) -> list[Values]:
        runs = results.get("startup", {}).get(STARTUP_COLUMNS.get(name, ""), {})
        if any(key not in runs for key in keys):
            return []
        return [tuple(values) for values in zip(*(runs[key] for key in keys), strict=True)]

    return sampler


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


def rows(sizes: Result) -> list[tuple[str, Sampler]]:
    """The table's rows: each label with where its samples come from."""
    out: list[tuple[str, Sampler]] = []
    wide = sizes["wide"]
    for concurrency, _ in sizes["first_event"]:
        label = f"first event, {concurrency} concurrent: p50 / p99 ms"
        out.append((label, per_rep(first_event(concurrency))))
        out.append(
            ("  added to the upstream's: p50 / p99 ms", per_rep(added_first_event(concurrency)))
        )
    clients, _ = sizes["closed_loop"]
    shape = f"{sizes['closed_loop_tokens']} chunks {sizes['closed_loop_delay_ms']:g} ms apart"
    out += [
        (
            f"closed loop, {clients} clients, {shape}: first token p50 / p99 ms",
            per_rep(closed_loop_first_token),
        ),
        ("  turns/s", per_rep(closed_loop_turns)),
        ("saturation (no delay): turns/s", per_rep(turns_per_second)),
        ("  events/s", per_rep(events_per_second)),
        ("  server CPU s per 1,000 events", per_rep(cpu_per_1000_events)),
        ("  server CPU ms per turn", per_rep(cpu_ms_per_turn)),
        (
            f"saturation, {sizes['long_answers'][1]}-token answers: turns/s",
            per_rep(long_turns_per_second),
        ),
        (f"{wide} streams, {sizes['delay_ms']:g} ms/token: completed", per_rep(wide_completed)),
        ("  first event p50 / p99 ms", per_rep(wide_first_event)),
        ("  p99 gap between events ms", per_rep(wide_gap)),
        ("  p99 gap above the upstream's ms", per_rep(wide_gap_above_upstream)),
        ("  memory per open stream KiB", per_rep(memory_per_stream)),
        ("stop to complete, same instance: p50 / p99 ms", per_rep(stop("same"))),
        ("stop to complete, across instances: p50 / p99 ms", per_rep(stop("across"))),
        ("SQL statements per turn: writes / reads", per_rep(statements_per_turn)),
        ("first burst, fresh server, median of the rounds: p50 / p99 ms", burst_rounds),
        ("start-up: import app.main s / MB peak RSS", startup_runs("import_s", "import_mb")),
        ("  start to /health s", startup_runs("health_s")),
        ("  at rest MB RSS", startup_runs("rest_mb")),
        ("  after a turn of each kind MB RSS", startup_runs("turns_mb")),
    ]
    return out


@dataclass(frozen=True, slots=True)
class Summary:
    """A figure's samples for one column: the median and the spread of each number."""

    median: Values
    low: Values
    high: Values
    count: int

    def holds(self, values: Values) -> list[bool]:
        """For each number, whether `values` lies within this spread."""
        return [
            low <= value <= high
            for value, low, high in zip(values, self.low, self.high, strict=True)
        ]


def summarize(samples: Sequence[Values]) -> Summary | None:
    if not samples:
        return None
    columns = list(zip(*samples, strict=True))
    return Summary(
        tuple(statistics.median(c) for c in columns),
        tuple(min(c) for c in columns),
        tuple(max(c) for c in columns),
        len(samples),
    )


def median(results: Result, name: str, sampler: Sampler) -> Values | None:
    summary = summarize(sampler(results, name))
    return None if summary is None else summary.median


def _fmt(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _cell(summary: Summary | None) -> str:
    """The median; with more than one sample, its spread beside it: `27.2 [25.0–30.1]`."""
    if summary is None:
        return "—"
    if summary.count == 1:
        return " / ".join(_fmt(v) for v in summary.median)
    return " / ".join(
        f"{_fmt(m)} [{_fmt(lo)}–{_fmt(hi)}]"
        for m, lo, hi in zip(summary.median, summary.low, summary.high, strict=True)
    )


def _ratio(values: Values | None, base: Values | None) -> str:
    if values is None or base is None:
        return "—"
    return " / ".join(f"{v / b:.2f}" if b else "—" for v, b in zip(values, base, strict=True))


def _is_yardstick(name: str) -> bool:
    return name.startswith("proxy") or name == TYPICAL


def yardstick(name: str, clients: dict[str, str]) -> str | None:
    """The lean relay a service column is compared with: the one on the same HTTP client.

    None for the upstream and the proxies themselves, and when no such relay ran.
    """
    if _is_yardstick(name) or name not in clients:
        return None
    for candidate, client in clients.items():
        if candidate.startswith("proxy") and client == clients[name]:
            return candidate
    return None


def yardsticks(name: str, clients: dict[str, str]) -> list[str]:
    """Every ratio column of a service column: the relay on its client, then the typical proxy."""
    if _is_yardstick(name) or name not in clients:
        return []
    relay = yardstick(name, clients)
    return [*([relay] if relay else []), *([TYPICAL] if TYPICAL in clients else [])]


def render(results: Result) -> str:
    columns: list[str] = results["columns"]
    clients: dict[str, str] = results["clients"]
    header = ["figure"]
    for name in columns:
        header.append(name)
        header += [f"× {base}" for base in yardsticks(name, clients)]
    lines = [header, ["---"] * len(header)]
    for label, sampler in rows(results["sizes"]):
        row = [label]
        for name in columns:
            summary = summarize(sampler(results, name))
            row.append(_cell(summary))
            for base in yardsticks(name, clients):
                row.append(
                    _ratio(
                        None if summary is None else summary.median,
                        median(results, base, sampler),
                    )
                )
        lines.append(row)
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def _safe(figure: Figure, result: Result, upstream: Result) -> Values | None:
    try:
        return figure(result, upstream)
    except KeyError:
        return None


def at_most(limit: float) -> Callable[[float], bool]:
    return lambda value: value <= limit


def verdicts(results: Result) -> list[str]:
    """The issues' targets, checked on the medians for each service column."""
    return [
        f"{name}: {check.label}: {_judged(check, value)}"
        for name, check, value in _measured(results)
    ]


def _measured(results: Result) -> list[tuple[str, Check, float]]:
    """Each target measured for each service column: (the column, the target, its figure)."""
    out: list[tuple[str, Check, float]] = []
    for name in results["columns"]:
        base = yardstick(name, results["clients"])
        if base is not None:
            out += [
                (name, check, value)
                for check in _checks(results, name, base)
                if (value := check.measured.value) is not None
            ]
    return out


def _judged(check: Check, value: float) -> str:
    return f"{_fmt(value)} {'PASS' if check.ok(value) else 'MISS'}"


Read = tuple[str, Sampler, int]
"""One figure a target reads: its column, its sampler, which of the figure's numbers."""


@dataclass(frozen=True, slots=True)
class Measured:
    value: float | None
    """The median figure, or the ratio of two medians; None where it was not measured."""
    reads: tuple[Read, ...]


@dataclass(frozen=True, slots=True)
class Check:
    label: str
    measured: Measured
    ok: Callable[[float], bool]


def _checks(results: Result, name: str, base: str) -> list[Check]:
    """Each target of column `name`, with what it reads, so two runs can compare those."""

    def of(column: str, sampler: Sampler, index: int) -> float | None:
        values = median(results, column, sampler)
        return None if values is None else values[index]

    def mine(sampler: Sampler, index: int = 0) -> Measured:
        return Measured(of(name, sampler, index), ((name, sampler, index),))

    def ratio(sampler: Sampler, against: str, index: int = 0) -> Measured:
        ours, theirs = of(name, sampler, index), of(against, sampler, index)
        value = None if ours is None or not theirs else ours / theirs
        return Measured(value, ((name, sampler, index), (against, sampler, index)))

    wide = results["sizes"]["wide"]
    concurrency, most = FIRST_EVENT_TARGET
    rounds = len(burst_rounds(results, name))
    return [
        Check(
            f"throughput >= {THROUGHPUT_TARGET} x {base}",
            ratio(per_rep(turns_per_second), base),
            lambda v: v >= THROUGHPUT_TARGET,
        ),
        Check(
            "added p50 first event at 1 stream < 15 ms",
            mine(per_rep(added_first_event(1))),
            lambda v: v < 15,
        ),
        Check(f"all {wide} streams complete", mine(per_rep(wide_completed)), lambda v: v == wide),
        Check(
            "p99 gap < upstream's + 100 ms",
            mine(per_rep(wide_gap_above_upstream)),
            lambda v: v < 100,
        ),
        Check(
            "memory per open stream < 100 KiB", mine(per_rep(memory_per_stream)), lambda v: v < 100
        ),
        Check(
            f"first event p99 at {concurrency} concurrent <= {most} x {base}",
            ratio(per_rep(first_event(concurrency)), base, 1),
            at_most(most),
        ),
        Check(
            f"first token p50, closed loop, <= {TYPICAL_TARGET} x {TYPICAL}",
            ratio(per_rep(closed_loop_first_token), TYPICAL),
            at_most(TYPICAL_TARGET),
        ),
        Check(
            "stop p99 across instances < 250 ms",
            mine(per_rep(stop("across")), 1),
            lambda v: v < 250,
        ),
        Check("2 writes per turn", mine(per_rep(statements_per_turn)), at_most(2.0)),
        Check(
            f"first burst p99, median of {rounds} rounds, <= {BURST_TARGET} x {base}",
            ratio(burst_rounds, base, 1),
            at_most(BURST_TARGET),
        ),
        *(
            Check(f"{label} <= {limit:g}", mine(startup_runs(key)), at_most(limit))
            for key, (label, limit) in STARTUP_TARGETS.items()
        ),
    ]


def floor_lines(results: Result) -> list[str]:
    """The floor (bench.floor) set against the relay: the best ratio this contract allows.

    At saturation each server spends its one core, so throughput is the inverse
    of CPU per turn. A service that did nothing but relay like the relay plus
    its storage and Redis work could reach at most relay / (relay + floor).
    Redis's part is what it adds to the same turn on the in-process registry.
    Each is the median of the repetitions' floors (one after the service column
    in each), set against the relay's median CPU per turn.
    """
    base = yardstick("service", results["clients"])
    proxy = None if base is None else median(results, base, per_rep(cpu_ms_per_turn))
    if not results["floors"] or base is None or proxy is None:
        return []
    floor = {
        key: statistics.median(each[key] for each in results["floors"])
        for key in ("store_cpu_ms", "redis_cpu_ms")
    }
    relay = proxy[0]
    store, redis = floor["store_cpu_ms"], floor["redis_cpu_ms"]
    cost = f"floor: storage {_fmt(store)} ms + Redis {_fmt(redis)} ms (over in-process) of CPU"
    if relay <= 0:
        # A run too short for one clock tick of the relay's CPU has no base to share.
        return [f"{cost} per turn; {base} used no measurable CPU, so no shares"]
    return [
        f"{cost} per turn; {base} {_fmt(relay)} ms per turn, so {THROUGHPUT_TARGET} x {base}"
        f" leaves {_fmt(relay / THROUGHPUT_TARGET - relay)} ms for all the service adds",
        f"floor: best ratio possible with storage alone {relay / (relay + store):.2f},"
        f" with storage and Redis {relay / (relay + store + redis):.2f}",
        *(
            f"floor: {part} {share:.3f} of {base}'s CPU per turn (target <= {target}):"
            f" {'PASS' if share <= target else 'MISS'}"
            for part, cost in (("storage", store), ("Redis", redis))
            for target, share in [(FLOOR_TARGETS[part], cost / relay)]
        ),
    ]


def agreement(first: Result, second: Result) -> tuple[int, list[str]]:
    """Figure by figure, whether two runs agree: each one's median within the other's spread.

    Issue 57's test of a run to be trusted. Returns how many figures were
    compared and a line for each that does not agree. A run of one repetition
    has no spread, so its figures agree only with an equal median.
    """
    compared, differ = 0, []
    for label, sampler in rows(first["sizes"]):
        for name in first["columns"]:
            a, b = summarize(sampler(first, name)), summarize(sampler(second, name))
            if a is None or b is None:
                continue
            matches = _each_agrees(a, b)
            compared += len(matches)
            differ += _unmatched(label, name, (a, b), matches)
    return compared, differ


def ratio_overlap(first: Result, second: Result) -> tuple[int, list[str]]:
    """For each service figure over each of its yardsticks, taken repetition by repetition
    (the figures the targets judge), whether the two runs' spreads overlap. Returns how many
    were compared and a line for each whose spreads do not.

    Ratios, because a machine's speed drifts between two runs (5% in twenty minutes here,
    every column alike) and moves every raw figure together, while within a repetition the
    columns are measured minutes apart. Overlapping spreads, because two runs of the same code
    have them for all but 1 figure in 10 at three repetitions (`chance_overlap`), where a
    median inside the other's spread both ways is a coin toss.
    """
    compared, apart = 0, []
    for label, sampler in rows(first["sizes"]):
        for name in first["columns"]:
            for base in yardsticks(name, first["clients"]):
                a = summarize(_ratio_samples(first, sampler, name, base))
                b = summarize(_ratio_samples(second, sampler, name, base))
                if a is None or b is None:
                    continue
                matches = _overlaps(a, b)
                compared += len(matches)
                apart += _unmatched(label, f"{name} × {base}", (a, b), matches)
    return compared, apart


def _unmatched(
    label: str, name: str, runs: tuple[Summary, Summary], matches: list[bool]
) -> list[str]:
    """A line for each number of a figure that does not match between the two runs."""
    a, b = runs
    return [
        f"{label.strip()}{_part(label, index) if len(a.median) > 1 else ''}, {name}:"
        f" {_spread(a, index)} against {_spread(b, index)}"
        for index, matched in enumerate(matches)
        if not matched
    ]


def _ratio_samples(results: Result, sampler: Sampler, name: str, base: str) -> list[Values]:
    """Each repetition's figure of `name` over `base`'s; none where a repetition lacks either
    (the samples could no longer be paired by repetition) or the yardstick's is zero."""
    ours, theirs = sampler(results, name), sampler(results, base)
    if len(ours) != len(theirs) or any(0 in values for values in theirs):
        return []
    return [
        tuple(mine / yard for mine, yard in zip(values, base_values, strict=True))
        for values, base_values in zip(ours, theirs, strict=True)
    ]


def chance_agreement(reps_a: int, reps_b: int, trials: int = 20_000) -> float:
    """The share of figures two runs agree on when nothing differs between them at all.

    Every repetition of both runs drawn from one and the same distribution: even
    then a median falls outside a spread of three by chance, and with three
    repetitions a side only about 40% of figures agree both ways. This is the
    yardstick for `agreement`'s count (seeded, so the same every time).
    """
    draw = random.Random(57).random
    agree = 0
    for _ in range(trials):
        a = sorted(draw() for _ in range(reps_a))
        b = sorted(draw() for _ in range(reps_b))
        agree += a[0] <= statistics.median(b) <= a[-1] and b[0] <= statistics.median(a) <= b[-1]
    return agree / trials


def chance_overlap(reps_a: int, reps_b: int) -> float:
    """The share of figures whose spreads overlap when two runs differ in nothing at all.

    Every repetition drawn from one distribution, the spreads fail to overlap only when all
    of one run's repetitions come out below all of the other's, or above: 2 orders of the
    C(m + n, m) equally likely ones. 90% at three repetitions a side, 99% at five.
    """
    return 1 - 2 / math.comb(reps_a + reps_b, reps_a)


def _overlaps(a: Summary, b: Summary) -> list[bool]:
    """For each number of a figure, whether the two runs' spreads share any value."""
    return [
        a_low <= b_high and b_low <= a_high
        for a_low, a_high, b_low, b_high in zip(a.low, a.high, b.low, b.high, strict=True)
    ]


def _each_agrees(a: Summary, b: Summary) -> list[bool]:
    """For each number of a figure, whether each run's median lies within the other's spread."""
    return [in_b and in_a for in_b, in_a in zip(b.holds(a.median), a.holds(b.median), strict=True)]


def _read_overlaps(first: Result, second: Result, read: Read) -> bool:
    column, sampler, index = read
    a, b = summarize(sampler(first, column)), summarize(sampler(second, column))
    return a is not None and b is not None and _overlaps(a, b)[index]


@dataclass(frozen=True, slots=True)
class VerdictChange:
    """A target that passes in one run and misses in the other."""

    line: str
    spreads_overlap: bool
    """Whether the spreads of every figure the target reads overlap between the two runs:
    then its median lies near the target and the runs' noise put it on either side, which a
    third run would not settle either. Otherwise one run measured what the other did not."""


def verdict_changes(first: Result, second: Result) -> list[VerdictChange]:
    """The targets whose verdict (PASS or MISS on the medians) differs between two runs."""
    before = {(name, check.label): (check, value) for name, check, value in _measured(first)}
    changed = []
    for name, check, value in _measured(second):
        earlier = before.get((name, check.label))
        if earlier is None or earlier[0].ok(earlier[1]) == check.ok(value):
            continue
        changed.append(
            VerdictChange(
                f"{name}: {check.label}: {_judged(*earlier)} then {_judged(check, value)}",
                all(_read_overlaps(first, second, read) for read in check.measured.reads),
            )
        )
    return changed


def alike(compared: int, overlapping: int, chance: float, changed: Sequence[VerdictChange]) -> bool:
    """The test of two runs this module proposes for issue 57, whose own ("every median
    within the other's spread") even two runs of the same code pass with a probability of
    about 0.4 per figure at three repetitions. Two runs are alike when no fewer of the
    ratios' spreads overlap (`ratio_overlap`) than two runs of the same code would give, less
    two standard deviations of that (binomial) count, and every verdict that changed did so
    with overlapping spreads: noise at its target."""
    expected = chance * compared
    spread = math.sqrt(compared * chance * (1 - chance))
    return overlapping >= expected - 2 * spread and all(c.spreads_overlap for c in changed)


def _part(label: str, index: int) -> str:
    """Which of a row's numbers: ` (p99 ms)` of "first event, 50 concurrent: p50 / p99 ms"."""
    parts = label.rsplit(":", 1)[-1].split(" / ")
    return f" ({parts[index].strip()})" if index < len(parts) else f" (number {index + 1})"


def _spread(summary: Summary, index: int) -> str:
    m, lo, hi = summary.median[index], summary.low[index], summary.high[index]
    return f"{_fmt(m)} [{_fmt(lo)}–{_fmt(hi)}]"


def print_report(results: Result) -> None:
    reps = len(results["reps"])
    if reps > 1:
        print(
            f"medians of {reps} repetitions, the columns' order rotating between them;"
            " [min–max] beside each"
        )
    print(render(results))
    for line in floor_lines(results):
        print(line)
    print()
    for line in verdicts(results):
        print(line)
    print(f"\ntracebacks in the servers' logs: {results.get('tracebacks', 0)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="`bench.run --json` files")
    parser.add_argument(
        "--agree",
        action="store_true",
        help="compare two runs: exit 1 unless each figure's median lies in the other's spread",
    )
    args = parser.parse_args(argv)
    loaded = [json.loads(path.read_text()) for path in args.runs]
    if not args.agree:
        for results in loaded:
            print_report(results)
        return
    if len(loaded) != 2:
        parser.error("--agree compares two runs")
    compared, differ = agreement(*loaded)
    for line in differ:
        print(line)
    chance = chance_agreement(*(len(results["reps"]) for results in loaded))
    print(
        f"{compared - len(differ)} of {compared} figures agree; two runs with nothing"
        f" different between them would agree on about {chance * compared:.0f} ({chance:.0%})"
    )
    ratios, apart = ratio_overlap(*loaded)
    for line in apart:
        print(f"spreads apart: {line}")
    overlap = chance_overlap(*(len(results["reps"]) for results in loaded))
    print(
        f"{ratios - len(apart)} of {ratios} ratios to a yardstick of the same repetition have"
        f" overlapping spreads; two runs of the same code: about {overlap * ratios:.0f}"
    )
    changed = verdict_changes(*loaded)
    for change in changed:
        noise = " (spreads overlap: noise at the target)" if change.spreads_overlap else ""
        print(f"verdict changed: {change.line}{noise}")
    print(f"{len(changed)} verdicts differ between the two runs")
    same = alike(ratios, ratios - len(apart), overlap, changed)
    print(f"as alike as two runs of the same code (issue 57, proposed): {same}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
