"""The benchmark's verdicts, from a run's raw results: judged on the medians of the repetitions."""

from __future__ import annotations

from typing import Any

import pytest

from bench.table import TYPICAL, verdicts


def _target(first_p99_at_50: float | None, closed_loop_p50: float = 10.0) -> dict[str, Any]:
    first = {"first_token_ms": {"p50": 1.0, "p99": 2.0}}
    result: dict[str, Any] = {
        "saturation": {"turns_per_second": 100.0},
        "first_event_1": first,
        "closed_loop": {"first_token_ms": {"p50": closed_loop_p50, "p99": 50.0}},
        "wide": {
            "completed": 10,
            "streams": 10,
            "gap_ms": {"p99": 25.0},
            "rss_before": 0,
            "rss_peak": 10 * 1024,
        },
    }
    if first_p99_at_50 is not None:
        result["first_event_50"] = {"first_token_ms": {"p50": 1.0, "p99": first_p99_at_50}}
    return result


def _results(service_p99s: list[float | None], proxy_p99: float | None) -> dict[str, Any]:
    return {
        "sizes": {"wide": 10},
        "columns": ["upstream", "proxy (httpx2)", "service"],
        "clients": {"proxy (httpx2)": "httpx2", "service": "httpx2"},
        "reps": [
            {
                "upstream": _target(proxy_p99),
                "proxy (httpx2)": _target(proxy_p99),
                "service": _target(service_p99),
            }
            for service_p99 in service_p99s
        ],
        "floors": [],
    }


@pytest.mark.parametrize(("service_p99", "verdict"), [(90.0, "1.50 PASS"), (91.0, "1.52 MISS")])
def test_the_first_events_p99_at_50_concurrent_is_judged_against_the_proxys(
    service_p99: float, verdict: str
) -> None:
    lines = verdicts(_results([service_p99], 60.0))

    line = "service: first event p99 at 50 concurrent <= 1.5 x proxy (httpx2): " + verdict
    assert line in lines


def test_a_target_is_judged_on_the_median_of_the_repetitions() -> None:
    # One slow repetition out of three does not decide it, as it would a single run.
    lines = verdicts(_results([300.0, 80.0, 85.0], 60.0))

    assert "service: first event p99 at 50 concurrent <= 1.5 x proxy (httpx2): 1.42 PASS" in lines


def test_a_run_without_50_concurrent_streams_has_no_such_verdict() -> None:
    lines = verdicts(_results([None], None))

    assert lines
    assert not [line for line in lines if "first event p99" in line]


@pytest.mark.parametrize(("service_p50", "verdict"), [(13.0, "1.30 PASS"), (14.0, "1.40 MISS")])
def test_the_first_token_under_the_closed_loop_is_judged_against_the_typical_proxy(
    service_p50: float, verdict: str
) -> None:
    results = _results([80.0], 60.0)
    results["columns"].append(TYPICAL)
    results["clients"][TYPICAL] = "httpx2"
    for rep in results["reps"]:
        rep[TYPICAL] = _target(60.0, closed_loop_p50=10.0)
        rep["service"]["closed_loop"]["first_token_ms"]["p50"] = service_p50

    lines = verdicts(results)

    assert f"service: first token p50, closed loop, <= 1.3 x typical proxy: {verdict}" in lines
