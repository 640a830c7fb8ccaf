"""Repeated benchmark runs: the rotating order, medians with their spreads, two runs compared."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from bench.harness import QUICK, rotated
from bench.table import (
    TYPICAL,
    VerdictChange,
    agreement,
    alike,
    chance_agreement,
    chance_overlap,
    ratio_overlap,
    render,
    verdict_changes,
)
from bench.table import main as table_main


def _run(turns_per_second: dict[str, list[float]]) -> dict[str, Any]:
    """A run's raw results holding only the saturation's turns/s, per column and repetition."""
    columns = list(turns_per_second)
    reps = [
        {
            "upstream": {"saturation": {"turns_per_second": 1000.0}},
            **{
                name: {"saturation": {"turns_per_second": values[rep]}}
                for name, values in turns_per_second.items()
            },
        }
        for rep in range(len(next(iter(turns_per_second.values()))))
    ]
    return {
        "sizes": asdict(QUICK),
        "columns": ["upstream", *columns],
        "clients": dict.fromkeys(columns, "httpx2"),
        "reps": reps,
        "floors": [],
    }


def _row(table: str, label: str) -> list[str]:
    [line] = [line for line in table.splitlines() if line.startswith(f"| {label} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_each_repetition_starts_the_columns_one_place_further_on() -> None:
    columns = ["A", "B", "C"]

    orders = [rotated(columns, rep) for rep in range(4)]

    assert orders == [["A", "B", "C"], ["B", "C", "A"], ["C", "A", "B"], ["A", "B", "C"]]


def test_the_table_gives_each_figure_as_its_median_and_spread() -> None:
    results = _run(
        {
            "proxy (httpx2)": [200.0, 250.0, 210.0],
            TYPICAL: [90.0, 110.0, 100.0],
            "service": [300.0, 220.0, 400.0],
        }
    )

    table = render(results)

    header = _row(table, "figure")
    assert header == [
        "figure",
        "upstream",
        "proxy (httpx2)",
        TYPICAL,
        "service",
        "× proxy (httpx2)",
        f"× {TYPICAL}",
    ]
    cells = _row(table, "saturation (no delay): turns/s")
    assert cells[4] == "300 [220–400]"
    # Ratios of the medians: 300 / 210 and 300 / 100.
    assert cells[5:] == ["1.43", "3.00"]


def test_one_repetition_shows_its_figure_alone() -> None:
    table = render(_run({"proxy (httpx2)": [200.0], "service": [300.0]}))

    assert _row(table, "saturation (no delay): turns/s")[2:4] == ["200", "300"]


def test_two_runs_agree_when_each_median_lies_within_the_others_spread() -> None:
    first = _run({"proxy (httpx2)": [200.0, 250.0, 210.0], "service": [300.0, 220.0, 400.0]})
    second = _run({"proxy (httpx2)": [205.0, 240.0, 220.0], "service": [280.0, 250.0, 310.0]})

    compared, differ = agreement(first, second)

    assert (compared, differ) == (3, [])


def test_a_median_outside_the_other_runs_spread_is_named() -> None:
    first = _run({"proxy (httpx2)": [200.0, 250.0, 210.0], "service": [300.0, 290.0, 310.0]})
    second = _run({"proxy (httpx2)": [205.0, 240.0, 220.0], "service": [200.0, 190.0, 320.0]})

    compared, differ = agreement(first, second)

    assert compared == 3
    assert differ == [
        "saturation (no delay): turns/s, service: 300 [290–310] against 200 [190–320]"
    ]


def test_the_agree_command_fails_when_two_saved_runs_disagree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    relay = [200.0, 210.0, 190.0]
    first.write_text(json.dumps(_run({"proxy (httpx2)": relay, "service": [300.0, 290.0, 310.0]})))
    second.write_text(json.dumps(_run({"proxy (httpx2)": relay, "service": [100.0, 90.0, 110.0]})))

    with pytest.raises(SystemExit) as exited:
        table_main([str(first), str(second), "--agree"])

    assert exited.value.code == 1
    out = capsys.readouterr().out
    assert "2 of 3 figures agree" in out
    assert "verdict changed: service: throughput >= 0.7 x proxy (httpx2): 1.50 PASS" in out
    assert out.rstrip().endswith("(issue 57, proposed): False")


def test_by_chance_alone_two_runs_of_three_agree_on_fewer_than_half_their_figures() -> None:
    """Medians of three fall outside each other's spreads though nothing changed: the
    count of agreeing figures is read against this, not against all of them."""
    assert 0.37 < chance_agreement(3, 3) < 0.43
    assert 0.91 < chance_agreement(9, 9) < 0.97
    assert chance_agreement(1, 1) == 0


def test_a_target_that_passes_in_one_run_and_misses_in_the_other_is_named() -> None:
    first = _run({"proxy (httpx2)": [200.0, 210.0, 190.0], "service": [300.0, 310.0, 290.0]})
    second = _run({"proxy (httpx2)": [200.0, 210.0, 190.0], "service": [100.0, 110.0, 90.0]})

    assert verdict_changes(first, first) == []
    assert verdict_changes(first, second) == [
        VerdictChange(
            "service: throughput >= 0.7 x proxy (httpx2): 1.50 PASS then 0.50 MISS",
            spreads_overlap=False,
        )
    ]


def test_a_verdict_that_changes_while_its_spreads_overlap_is_told_apart_as_noise() -> None:
    """A median near its target lands on either side of it from run to run: the spreads
    overlap, the verdict differs, and that says nothing about the code."""
    first = _run({"proxy (httpx2)": [200.0, 210.0, 190.0], "service": [142.0, 135.0, 150.0]})
    second = _run({"proxy (httpx2)": [200.0, 210.0, 190.0], "service": [138.0, 132.0, 145.0]})

    [change] = verdict_changes(first, second)

    assert change.line.endswith("0.71 PASS then 0.69 MISS")
    assert change.spreads_overlap


def test_a_faster_machine_moves_every_raw_figure_but_not_the_ratios_of_one_repetition() -> None:
    """The machine 10% faster in the second run, every column alike: no raw figure agrees,
    and each repetition's ratio of the service to its yardstick is what it was."""
    first = _run({"proxy (httpx2)": [200.0, 210.0, 190.0], "service": [300.0, 310.0, 290.0]})
    faster = _run({"proxy (httpx2)": [220.0, 231.0, 209.0], "service": [330.0, 341.0, 319.0]})

    compared, differ = agreement(first, faster)

    assert compared == 3  # the upstream's figure (the same in both here) agrees
    assert [line.split(", ")[1].split(":")[0] for line in differ] == ["proxy (httpx2)", "service"]
    assert ratio_overlap(first, faster) == (1, [])


def test_two_runs_of_the_same_code_have_overlapping_spreads_nine_times_in_ten() -> None:
    assert chance_overlap(3, 3) == pytest.approx(0.9)
    assert chance_overlap(5, 5) == pytest.approx(1 - 2 / 252)
    assert chance_overlap(1, 1) == 0


def test_two_runs_are_alike_at_the_overlap_chance_gives_and_not_far_below_it() -> None:
    noise = VerdictChange("service: a target: 1.01 PASS then 0.99 MISS", spreads_overlap=True)
    moved = VerdictChange("service: a target: 1.50 PASS then 0.50 MISS", spreads_overlap=False)
    chance = chance_overlap(3, 3)

    assert alike(112, 100, chance, [noise])  # the two runs at 3174371 and e4a4f42
    assert alike(112, 95, chance, [])  # within two standard deviations (3.2 ratios each)
    assert not alike(112, 90, chance, [])
    assert not alike(112, 112, chance, [moved])
