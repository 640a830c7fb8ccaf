"""The tracing benchmark still runs end to end (bench/tracing.py), at tiny sizes.

It asserts nothing about speed: only that every variant, the baseline served
from an unpacked commit included, answered its turns (a turn that does not
complete fails the run) and has a figure.
"""

from __future__ import annotations

from bench.tracing import Options, measure


def test_tracing_bench_measures_every_variant() -> None:
    figures = measure(
        Options(turns=4, warmup=1, concurrency=2, batch=2, repetitions=1, baseline="HEAD")
    )

    assert list(figures) == ["baseline (HEAD)", "off", "on"]
    assert all(len(values) == 1 and values[0] >= 0 for values in figures.values())
