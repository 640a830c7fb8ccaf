"""`bench/decks.py` still runs, at a tiny size (bench/README.md).

Nothing about speed is asserted: that every template's deck is drawn, converted
to a PDF of one page a slide, and its thumbnails drawn.
"""

from __future__ import annotations

from pathlib import Path

from bench.decks import USER_TEMPLATE, measure, report
from tests.conftest import require_binary


async def test_the_deck_bench_draws_and_converts_a_deck_on_every_template(tmp_path: Path) -> None:
    require_binary("soffice", "LibreOffice (Debian's libreoffice-impress)")
    figures = await measure(slides=3, runs=1, folder=tmp_path)

    assert USER_TEMPLATE in figures
    assert all(f["pages"] == 3 for f in figures.values())
    assert all(f["pdf"] > 0 for f in figures.values())
    assert "| ocean | 3 | 3 |" in report(figures, 3)
