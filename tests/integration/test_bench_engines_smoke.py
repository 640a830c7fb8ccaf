"""`bench/engines.py` still runs, at a tiny size, on both topologies (bench/README.md).

Nothing about speed is asserted, which on a shared machine says nothing: that
every kind of turn completes and is counted on both engines, in both topologies.
"""

from __future__ import annotations

from pathlib import Path

from bench.engines import KINDS, TOPOLOGIES, Sizes, run
from tests.conftest import require_binary


def test_the_engines_bench_counts_every_kind_of_turn_in_both_topologies(tmp_path: Path) -> None:
    require_binary("pg_config", "PostgreSQL's server programs")
    results, statements = run(Sizes(turns=1, streams=4, concurrency=2), tmp_path)

    assert statements
    assert set(results) == set(TOPOLOGIES)
    for figures in results.values():
        for kind in KINDS:
            cost = figures["per_turn"][kind]
            assert cost["statuses"] == {"completed": 1}
            assert cost["redis_commands"] > 0
            # The question stored (with the memory read), then the answer.
            assert {"WITH", "UPDATE"} <= set(cost["postgres_by_verb"])
        assert figures["throughput"]["completed"] == 4
