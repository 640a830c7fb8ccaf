"""Summarise a CSV, TSV or .xlsx table as Markdown: per column, its type, gaps and statistics.

Standard library only, and openpyxl for .xlsx; run inside the skills agent's sandbox.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from pathlib import Path

Cell = str | int | float | date | datetime | None


def read_rows(path: Path, sheet: str | None) -> list[list[Cell]]:
    if path.suffix.lower() in (".xlsx", ".xlsm"):
        from openpyxl import load_workbook

        book = load_workbook(path, read_only=True, data_only=True)
        table = book[sheet] if sheet else book.worksheets[0]
        return [list(row) for row in table.iter_rows(values_only=True)]
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096], ",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if path.suffix.lower() == ".tsv" else csv.excel
    return [list(row) for row in csv.reader(text.splitlines(), dialect)]


def number(value: Cell) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        cleaned = value.strip().replace(",", "")
        try:
            return float(cleaned)
        except ValueError:
            return None
    return None


def missing(value: Cell) -> bool:
    return value is None or (isinstance(value, str) and value.strip() in ("", "NA", "N/A", "null"))


def describe(name: str, values: Sequence[Cell], top: int) -> list[str]:
    present = [v for v in values if not missing(v)]
    gaps = len(values) - len(present)
    numbers = [n for n in (number(v) for v in present) if n is not None]
    lines = [f"### {name}", ""]
    if present and len(numbers) == len(present):
        lines += [
            "- type: number",
            f"- missing: {gaps}",
            f"- min: {min(numbers):g}, max: {max(numbers):g}",
            f"- mean: {statistics.fmean(numbers):.4g}, median: {statistics.median(numbers):g}",
        ]
        if len(numbers) > 1:
            lines.append(f"- standard deviation: {statistics.stdev(numbers):.4g}")
    elif present and all(isinstance(v, date | datetime) for v in present):
        days = sorted(present, key=str)
        lines += ["- type: date", f"- missing: {gaps}", f"- from {days[0]} to {days[-1]}"]
    else:
        counts = Counter(str(v).strip() for v in present)
        lines += ["- type: text", f"- missing: {gaps}", f"- distinct values: {len(counts)}"]
        lines += [f"- `{value}`: {count}" for value, count in counts.most_common(top)]
    return [*lines, ""]


def summarize(rows: Iterable[Sequence[Cell]], title: str, top: int) -> str:
    table = [list(r) for r in rows if any(not missing(c) for c in r)]
    if not table:
        return f"# {title}\n\nThe table is empty.\n"
    header = [str(h).strip() if h is not None else "" for h in table[0]]
    body = table[1:]
    width = max(len(header), *(len(r) for r in body)) if body else len(header)
    header += [""] * (width - len(header))
    names = [h or f"column {i + 1}" for i, h in enumerate(header)]
    out = [f"# {title}", "", f"{len(body)} rows, {width} columns.", "", "## Columns", ""]
    for index, name in enumerate(names):
        column = [r[index] if index < len(r) else None for r in body]
        out += describe(name, column, top)
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("table", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--sheet")
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args(argv)
    report = summarize(read_rows(args.table, args.sheet), f"Summary of {args.table.name}", args.top)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report, encoding="utf-8")
        print(f"Wrote {args.out}")
    else:
        sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
