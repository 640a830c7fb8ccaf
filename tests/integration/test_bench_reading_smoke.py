"""`bench/reading.py` still runs, at a tiny size (bench/README.md).

Nothing about speed is asserted, which on a shared machine says nothing: that
both page sizes are read through `fetch_page` and a scan is read by OCR.
"""

from __future__ import annotations

from bench.reading import SIZES, measure, report
from tests.conftest import require_binary


async def test_the_reading_bench_reads_both_page_sizes_and_a_scan() -> None:
    require_binary("tesseract", "Tesseract (scripts/install-ocr)")
    figures = await measure(count=2, parallel=2, ocr_pages=1)

    assert set(figures["pages"]) == set(SIZES)
    assert all(p["one_at_a_time"] > 0 and p["parallel"] > 0 for p in figures["pages"].values())
    assert figures["ocr"]["scanned_pdf"] > 0
    assert "| 2 MB |" in report(figures)
