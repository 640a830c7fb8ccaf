"""The benchmark still runs end to end and reports every figure (bench/README.md).

It runs the real harness at tiny sizes: every process it starts, every
scenario, the table. It asserts nothing about speed, which on a shared
machine says nothing; it asserts that each figure is there, that every
stream completed, and the statement count, which does not depend on speed.
"""

from __future__ import annotations

from bench.run import Sizes, run
from bench.table import figures, floor_lines, render, statements_per_turn
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
)


def test_bench_reports_every_figure_for_every_column(redis_url: str) -> None:
    require_server(POSTGRES_TEST_URL, "PostgreSQL")

    results = run(TINY, postgres_url=POSTGRES_TEST_URL, redis_url=redis_url)

    targets = results["targets"]
    assert list(targets) == ["upstream", "proxy", "proxy (httpx2)", "service", "service (embedded)"]
    for name, scenarios in targets.items():
        for scenario, report in scenarios.items():
            assert report["completed"] == report["streams"], (name, scenario, report["errors"])
    scenarios_run = set(targets["service"])
    assert scenarios_run >= {"saturation", "long_answers", "wide", "stop_same", "stop_across"}
    assert "stop_across" not in targets["service (embedded)"]
    upstream = targets["upstream"]
    for name in ("service", "service (embedded)"):
        writes, reads = statements_per_turn(targets[name], upstream) or (0.0, 0.0)
        assert (writes, reads) == (2.0, 1.0), name
    table = render(results)
    for label, _ in figures(results["sizes"]):
        assert label in table
    assert results["floor"]["turns"] == 4
    assert results["floor"]["store_cpu_ms"] > 0
    assert results["floor"]["redis_cpu_ms"] > 0
    assert len(floor_lines(results)) == 2
    assert results["tracebacks"] == 0
