"""`bench/previews.py` still runs, at a tiny size (bench/README.md).

Nothing about speed is asserted, which on a shared machine says nothing: that
a pdf and a docx are drawn, kept, and a report's files are made.
"""

from __future__ import annotations

from bench.previews import measure, report
from tests.conftest import require_binary


async def test_the_previews_bench_draws_a_pdf_and_a_docx_and_makes_a_report() -> None:
    require_binary("soffice", "LibreOffice (scripts/install-office)")
    figures = await measure(pages=2, repeats=1)

    for kind in ("pdf", "docx"):
        assert all(figures[kind][key] > 0 for key in ("first", "other", "kept"))
        assert figures[kind]["kept"] < figures[kind]["first"]
    assert figures["report"]["docx"] > 0
    assert figures["report"]["pdf"] > 0
    assert "| docx |" in report(figures)
