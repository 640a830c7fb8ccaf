"""Extract a PDF's text as Markdown, one section per page, with its page count and metadata.

Only pypdf; run inside the skills agent's sandbox.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pypdf import PdfReader

NO_TEXT = "(no text on this page: a scan or an image)"


def page_numbers(spec: str | None, count: int) -> list[int]:
    """`1-3,5` as 1-based page numbers within the document, in order."""
    if not spec:
        return list(range(1, count + 1))
    pages: list[int] = []
    for part in spec.split(","):
        first, _, last = part.strip().partition("-")
        start, end = int(first), int(last or first)
        pages += [n for n in range(start, end + 1) if 1 <= n <= count and n not in pages]
    return pages


def extract(path: Path, spec: str | None) -> str:
    reader = PdfReader(path)
    count = len(reader.pages)
    meta = reader.metadata
    lines = [f"# {path.name}", "", f"Pages: {count}"]
    if meta is not None and meta.title:
        lines.append(f"Title: {meta.title}")
    if meta is not None and meta.author:
        lines.append(f"Author: {meta.author}")
    for number in page_numbers(spec, count):
        text = (reader.pages[number - 1].extract_text() or "").strip()
        lines += ["", f"## Page {number}", "", text or NO_TEXT]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("pdf", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--pages")
    args = parser.parse_args(argv)
    text = extract(args.pdf, args.pages)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"Wrote {args.out} ({text.count('## Page ')} pages)")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
