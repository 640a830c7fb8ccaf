"""`bench/search.py` still runs, at a tiny size, on both databases (bench/README.md).

Nothing about speed is asserted, which on a shared machine says nothing: that
every query kind is timed, and that what it finds is what the turns hold.
"""

from __future__ import annotations

from bench.search import QUERIES, measure


async def test_the_search_bench_times_every_query_on_the_database(database_url: str) -> None:
    figures = await measure(database_url, turns=400, users=2, repeat=2)

    assert set(QUERIES) <= set(figures)
    assert all(figures[name]["p99_ms"] >= figures[name]["p50_ms"] > 0 for name in QUERIES)
    assert figures["common word"]["matches_per_user"] > 100
    assert figures["Chinese"]["matches_per_user"] > 0
    assert figures["no match"]["matches_per_user"] == 0
