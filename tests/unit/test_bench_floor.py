"""The floor lines of the benchmark report, from readings a short run can give."""

from __future__ import annotations

from typing import Any

from bench.table import floor_lines


def _results(proxy_cpu_seconds: float, floors: int = 1) -> dict[str, Any]:
    saturation = {"cpu_seconds": proxy_cpu_seconds, "completed": 100}
    return {
        "floors": [{"store_cpu_ms": 0.3, "redis_cpu_ms": 0.2, "turns": 100}] * floors,
        "clients": {"proxy (httpx2)": "httpx2", "service": "httpx2"},
        "reps": [{"proxy (httpx2)": {"saturation": saturation}, "upstream": {}}],
    }


def test_the_floor_is_shared_against_the_proxys_cpu() -> None:
    lines = floor_lines(_results(0.3))

    assert len(lines) == 4
    assert "storage 0.100 of proxy (httpx2)'s CPU per turn (target <= 0.11): PASS" in lines[2]
    assert "Redis 0.067 of proxy (httpx2)'s CPU per turn (target <= 0.09): PASS" in lines[3]


def test_the_floor_is_the_median_of_the_repetitions_floors() -> None:
    results = _results(0.3)
    results["floors"] = [
        {"store_cpu_ms": cost, "redis_cpu_ms": 0.2, "turns": 100} for cost in (0.3, 0.9, 0.2)
    ]

    lines = floor_lines(results)

    assert "storage 0.100 of proxy (httpx2)'s CPU per turn" in lines[2]


def test_a_proxy_that_used_no_measurable_cpu_gives_no_shares() -> None:
    lines = floor_lines(_results(0.0))

    assert lines == [
        "floor: storage 0.30 ms + Redis 0.20 ms (over in-process) of CPU per turn;"
        " proxy (httpx2) used no measurable CPU, so no shares"
    ]
