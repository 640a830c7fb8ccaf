"""The benchmark still runs end to end and reports every figure (bench/README.md).

It runs the real harness at tiny sizes: every process it starts, every
scenario, the table. It asserts nothing about speed, which on a shared
machine says nothing; it asserts that each figure is there, that every
stream completed, and the statement count, which does not depend on speed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.deep import main as deep_bench
from bench.formats import FORMATS
from bench.formats import main as formats_bench
from bench.harness import Sizes
from bench.run import run
from bench.startbreakdown import STAGES
from bench.startbreakdown import measure as start_breakdown
from bench.table import TYPICAL, floor_lines, render, rows, statements_per_turn, verdicts
from tests.conftest import POSTGRES_TEST_URL, require_server

TINY = Sizes(
    first_event=((1, 2), (3, 6)),
    first_event_tokens=3,
    delay_ms=2,
    saturation=(2, 6),
    saturation_tokens=3,
    long_answers=(4, 6),
    wide=4,
    wide_tokens=3,
    stops=2,
    floor_turns=4,
    closed_loop=(2, 6),
    closed_loop_tokens=3,
    closed_loop_delay_ms=2,
)


def test_bench_reports_every_figure_for_every_column(redis_url: str) -> None:
    require_server(POSTGRES_TEST_URL, "PostgreSQL")

    results = run(
        TINY, postgres_url=POSTGRES_TEST_URL, redis_url=redis_url, burst_rounds=1, startup_runs=1
    )

    [targets] = results["reps"]
    columns = ["upstream", "proxy", "proxy (httpx2)", TYPICAL, "service", "service (embedded)"]
    assert results["columns"] == list(targets) == columns
    for name, scenarios in targets.items():
        for scenario, report in scenarios.items():
            assert report["completed"] == report["streams"], (name, scenario, report["errors"])
        assert "closed_loop" in scenarios, name
    scenarios_run = set(targets["service"])
    assert scenarios_run >= {"saturation", "long_answers", "wide", "stop_same", "stop_across"}
    assert "stop_across" not in targets["service (embedded)"]
    upstream = targets["upstream"]
    # A turn reads once, before anything is written: its conversation's project and its
    # user's memory in one statement (they choose the model and shape the prompt, so they
    # cannot ride in the question's INSERT, which on PostgreSQL reads the turns above it).
    # SQLite reads those turns apart, and only when there is a turn above the new one (the
    # benchmark's are all first ones). With Redis the dead-instance sweep reads the running
    # rows once a beat (a fifth of INSTANCE_DEAD_SECONDS, 3 s): the cluster's statement, not
    # a turn's, and a run this small may catch one.
    for name, sweeps in (("service", True), ("service (embedded)", False)):
        counts = statements_per_turn(targets[name], upstream)
        assert counts is not None, name
        writes, reads = counts
        saturation = targets[name]["saturation"]
        turns = sum(saturation["statuses"].values())
        most_reads = turns + (1 + saturation["wall_seconds"] // 3 if sweeps else 0)
        assert (writes, turns <= reads * turns <= most_reads) == (2.0, True), (name, counts)
    table = render(results)
    for label, _ in rows(results["sizes"]):
        assert label in table
    assert f"× {TYPICAL}" in table.splitlines()[0]
    [floor] = results["floors"]
    assert floor["turns"] == 4
    assert floor["store_cpu_ms"] > 0
    assert floor["redis_turn_cpu_ms"] > 0
    assert floor["in_process_turn_cpu_ms"] > 0
    assert floor["redis_cpu_ms"] == floor["redis_turn_cpu_ms"] - floor["in_process_turn_cpu_ms"]
    lines = floor_lines(results)
    assert lines[0].startswith("floor: storage")
    # The proxy's CPU is read in clock ticks; a tiny run can use less than one.
    proxy_cpu = targets["proxy (httpx2)"]["saturation"]["cpu_seconds"]
    assert len(lines) == (4 if proxy_cpu else 1)
    [burst] = results["burst"]["rounds"]
    assert list(burst) == ["proxy (httpx2)", "service", "service (embedded)"]
    for name, row in burst.items():
        assert row["completed"] == row["streams"] == 6, name
    startup = results["startup"]
    assert set(startup["service"]) == {"import_s", "import_mb", "health_s", "rest_mb", "turns_mb"}
    [turns_mb], [rest_mb] = startup["service"]["turns_mb"], startup["service"]["rest_mb"]
    assert turns_mb > rest_mb > 0
    checked = "\n".join(verdicts(results))
    for line in (
        "service: first burst p99",
        "service (embedded): import app.main, s <= 1",
        f"service: first token p50, closed loop, <= 1.3 x {TYPICAL}",
    ):
        assert line in checked
    assert results["tracebacks"] == 0


def test_bench_repeats_each_column_in_a_rotating_order(redis_url: str) -> None:
    require_server(POSTGRES_TEST_URL, "PostgreSQL")

    results = run(
        TINY,
        reps=2,
        only=frozenset({"proxy (httpx2)", "typical"}),
        postgres_url=POSTGRES_TEST_URL,
        redis_url=redis_url,
    )

    orders = [list(rep) for rep in results["reps"]]
    assert orders == [
        ["upstream", "proxy (httpx2)", TYPICAL],
        ["proxy (httpx2)", TYPICAL, "upstream"],
    ]
    # Each figure is the median of the two, its spread beside it.
    turns_row = next(line for line in render(results).splitlines() if "closed loop" in line)
    assert turns_row.count("[") == 2 * len(results["columns"])


def test_start_breakdown_reads_every_stage_of_each_turns_start(redis_url: str) -> None:
    require_server(POSTGRES_TEST_URL, "PostgreSQL")

    results = start_breakdown(TINY, postgres_url=POSTGRES_TEST_URL, redis_url=redis_url)

    columns = results["columns"]
    assert list(columns) == [TYPICAL, "service", "service (embedded)"]
    assert "stages" not in columns[TYPICAL]
    for name, missing in (
        ("service", {"history read"}),
        ("service (embedded)", {"claim"}),
    ):
        column = columns[name]
        # Every turn's spans joined its client's times.
        assert column["turns"] == column["completed"] == 6, name
        assert set(column["stages"]) == set(STAGES) - missing, name
        assert all(stage["p50"] >= 0 for stage in column["stages"].values()), name


def test_deep_bench_counts_one_checkpoint_per_super_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path}/app.db"
    deep_bench(["--database-url", database, "--data-dir", str(tmp_path), "--turns", "2"])

    report = json.loads(capsys.readouterr().out)
    # The input, then a put per super-step: start, clarify, brief, plan, the three tasks
    # (one wave), gather, critique, report; each node's writes are a batch of their own.
    assert report["checkpoint_puts_per_turn"] == 9
    assert report["write_batches_per_turn"] == 10
    assert report["turn_cpu_ms_checkpoints_in_database"] > 0


def test_formats_bench_prices_every_format_and_every_turn_completes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Each batch checks its turns ended as completed in its format, or the run fails.
    formats_bench(["--rounds", "1", "--turns", "3", "--concurrency", "2", "--tokens", "3"])

    out = capsys.readouterr().out
    for name in FORMATS:
        assert f"  {name} " in out
    assert "3-token answers" in out
