"""A few points set larger and further apart, so a list fills its box rather than its top.

A template's list box is sized for its most points at their longest (the
budgets), so three short points at the template's size would take its top
quarter. Here the points' lines are reckoned from their length, with wide
glyphs (Verdana's) so the reckoning errs large: the largest size up to
`MOST_GROWTH` times the template's whose lines take at most `TEXT_SHARE` of
the box is used, and the height left over is shared between the points, up
to `MOST_GAP` lines apart. Never smaller than the template's own size or
spacing, so text within the budgets fits as it did; where the reckoning is
still short, the box's shrink-on-overflow is the safety net. Where the block
sits in the box is the template's anchor.
"""

from __future__ import annotations

import math

from pptx.oxml.ns import qn
from pptx.oxml.xmlchemy import BaseOxmlElement
from pptx.util import Emu

EMU_PER_PT = 12700
GLYPH_WIDTH = 0.6
"""An average glyph's width, of the font size: Verdana's; the shipped fonts are narrower."""
LINE_HEIGHT = 1.2
MOST_GROWTH = 1.5
TEXT_SHARE = 0.6
FILL = 0.9
"""The share of the box the points and the space between them may take together."""
MOST_GAP = 2.5
"""The most space between two points, in lines of their size."""
INSETS_PT = (14.4, 7.2)
"""A text box's default insets, left plus right and top plus bottom."""


def spread(body: BaseOxmlElement, box: tuple[int, int], lines: list[str]) -> None:
    """Size and space the points of `body` (a filled list's `p:txBody`) for its `box`
    (width, height in EMU)."""
    paragraphs = body.findall(qn("a:p"))
    sizes = [run.get("sz") for p in paragraphs for run in p.iter(qn("a:rPr"))]
    if not paragraphs or not sizes or None in sizes or len(paragraphs) != len(lines):
        return
    base = int(sizes[0] or 0) / 100
    props = paragraphs[0].find(qn("a:pPr"))
    margin = int(props.get("marL", "0")) / EMU_PER_PT if props is not None else 0.0
    width = box[0] / EMU_PER_PT - INSETS_PT[0]
    height = box[1] / EMU_PER_PT - INSETS_PT[1]

    def text_height(size: float) -> float:
        per_line = max(int((width - margin * size / base) / (size * GLYPH_WIDTH)), 1)
        # A word that does not fit wraps whole: a line holds a few characters fewer.
        rows = sum(math.ceil(len(line) / max(per_line - 4, 1)) for line in lines)
        return rows * size * LINE_HEIGHT

    size = next(
        (
            s
            for s in range(int(base * MOST_GROWTH), int(base), -1)
            if text_height(s) <= TEXT_SHARE * height
        ),
        base,
    )
    scale = size / base
    # The height the points leave, shared between the gaps between them.
    gap = (FILL * height - text_height(size)) / max(len(lines) - 1, 1)
    for index, paragraph in enumerate(paragraphs):
        for run in paragraph.iter(qn("a:rPr")):
            run.set("sz", str(round(size * 100)))
        own = paragraph.find(qn("a:pPr"))
        if own is None:
            continue
        for attribute in ("marL", "indent"):
            if own.get(attribute) is not None:
                own.set(attribute, str(Emu(round(int(own.get(attribute)) * scale))))
        after = own.find(f"{qn('a:spcAft')}/{qn('a:spcPts')}")
        if after is None:
            continue
        least = int(after.get("val")) / 100
        spaced = min(max(gap, least), size * MOST_GAP)
        after.set("val", str(round(spaced * 100) if index < len(paragraphs) - 1 else 0))
