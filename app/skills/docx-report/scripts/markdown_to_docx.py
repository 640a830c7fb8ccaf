"""Turn a Markdown file into a .docx: headings, paragraphs, inline emphasis, lists, quotes, tables.

Only python-docx; run inside the skills agent's sandbox.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from docx import Document
from docx.document import Document as WordDocument
from docx.text.paragraph import Paragraph

HEADING = re.compile(r"^(#{1,4})\s+(.*)$")
BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
INLINE = re.compile(r"(\*\*[^*]+\*\*|\*[^*]+\*|`[^`]+`)")


def add_inline(paragraph: Paragraph, text: str) -> None:
    """Bold, italic and code spans as runs."""
    for part in INLINE.split(text):
        if not part:
            continue
        if part.startswith("**") and part.endswith("**"):
            paragraph.add_run(part[2:-2]).bold = True
        elif part.startswith("`") and part.endswith("`"):
            paragraph.add_run(part[1:-1]).font.name = "Courier New"
        elif part.startswith("*") and part.endswith("*") and len(part) > 2:
            paragraph.add_run(part[1:-1]).italic = True
        else:
            paragraph.add_run(part)


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def convert(markdown: str, title: str | None) -> WordDocument:
    document = Document()
    lines = markdown.splitlines()
    paragraph: list[str] = []
    first_heading: str | None = None

    def flush() -> None:
        if paragraph:
            add_inline(document.add_paragraph(), " ".join(s.strip() for s in paragraph))
            paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        heading = HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            text = heading.group(2).strip()
            first_heading = first_heading or text
            document.add_heading(text, level=0 if level == 1 else level - 1)
        elif (
            line.strip().startswith("|") and index + 1 < len(lines) and RULE.match(lines[index + 1])
        ):
            flush()
            header = cells(line)
            rows: list[list[str]] = []
            index += 2
            while index < len(lines) and lines[index].strip().startswith("|"):
                rows.append(cells(lines[index]))
                index += 1
            table = document.add_table(rows=1 + len(rows), cols=len(header))
            table.style = "Table Grid"
            for row_index, row in enumerate([header, *rows]):
                for col, text in enumerate(row[: len(header)]):
                    cell = table.cell(row_index, col)
                    add_inline(cell.paragraphs[0], text)
                    if row_index == 0:
                        for run in cell.paragraphs[0].runs:
                            run.bold = True
            continue
        elif item := BULLET.match(line) or NUMBERED.match(line):
            flush()
            style = "List Bullet" if BULLET.match(line) else "List Number"
            add_inline(document.add_paragraph(style=style), item.group(1))
        elif line.startswith(">"):
            flush()
            add_inline(document.add_paragraph(style="Quote"), line.lstrip("> ").strip())
        elif not line.strip():
            flush()
        else:
            paragraph.append(line)
        index += 1
    flush()
    document.core_properties.title = title or first_heading or ""
    return document


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("markdown", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    if args.output.suffix.lower() != ".docx":
        parser.error("the output must end in .docx")
    document = convert(args.markdown.read_text(encoding="utf-8"), args.title)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(args.output))
    print(f"Wrote {args.output} ({args.output.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
