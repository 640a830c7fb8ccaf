"""The verdict on the first event's p99 at 50 concurrent streams, from a run's raw results."""

from __future__ import annotations

from typing import Any

import pytest

from bench.table import verdicts


def _target(first_p99_at_50: float | None) -> dict[str, Any]:
    first = {"first_token_ms": {"p50": 1.0, "p99": 2.0}}
    result: dict[str, Any] = {
        "saturation": {"turns_per_second": 100.0},
        "first_event_1": first,
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


def _results(service_p99: float | None, proxy_p99: float | None) -> dict[str, Any]:
    return {
        "sizes": {"wide": 10},
        "clients": {"proxy (httpx2)": "httpx2", "service": "httpx2"},
        "targets": {
            "upstream": _target(proxy_p99),
            "proxy (httpx2)": _target(proxy_p99),
            "service": _target(service_p99),
        },
    }


@pytest.mark.parametrize(("service_p99", "verdict"), [(90.0, "1.50 PASS"), (91.0, "1.52 MISS")])
def test_the_first_events_p99_at_50_concurrent_is_judged_against_the_proxys(
    service_p99: float, verdict: str
) -> None:
    lines = verdicts(_results(service_p99, 60.0))

    line = "service: first event p99 at 50 concurrent <= 1.5 x proxy (httpx2): " + verdict
    assert line in lines


def test_a_run_without_50_concurrent_streams_has_no_such_verdict() -> None:
    lines = verdicts(_results(None, None))

    assert lines
    assert not [line for line in lines if "first event p99" in line]
