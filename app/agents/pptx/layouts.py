"""A user's own template: its layouts matched to the builder's slide kinds by their placeholders.

An uploaded `.pptx` is read in the isolated reader (`readers.layouts`: every
layout of every master with its placeholders' kinds and boxes); here each
page type is given the layout that can hold it, judged by placeholders, never
by names (which are free text, in any language):

    bullets, agenda, table, chart   a title and one large body (table and chart
                                    go in that body's box)
    comparison                      a title and two bodies side by side (two
                                    more above them, when there, take the headings)
    image_text                      a title, a picture and a body; drawn on the
                                    content layout when no picture is drawn
    cover, closing                  a title and a subtitle, else a title and a small
                                    body, else the content layout
    section                         a title and a small body, else as the cover

A template without a content layout (a title and one large body) cannot be
used: `UnusableTemplate` says so. A kind with no layout of its own is left
out of the template's pages, so the model never plans it (comparison, only).
The result is a `TemplateSpec` the schema check and the prompts read like a
shipped template's, and a `LayoutPlan` the renderer (render_layouts.py) reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel

from app.agents.pptx.templates import FieldSpec, PageSpec, PageType, TemplateSpec

PlaceholderKind = Literal["title", "subtitle", "body", "picture", "other"]
LARGE_BODY = 0.25
"""A body placeholder covering at least this share of the slide holds content; smaller
ones hold a subtitle or a caption."""
TITLE_PT, TEXT_PT, BULLET_PT = 32, 20, 18
"""The font sizes the budgets are reckoned for (a template's own may differ; text that
overflows shrinks to fit)."""
EMU_PER_PT = 12700
TABLE_FIELD = FieldSpec(name="table", kind="table", budget=40, max_items=6, max_columns=4)
CHART_FIELD = FieldSpec(name="chart", kind="chart", budget=30, max_items=8, max_columns=3)
"""A chart: at most 8 categories (labels of `budget` characters) and 3 series."""


class Placeholder(BaseModel):
    kind: PlaceholderKind
    idx: int
    """Its place among the layout's placeholders that a new slide gets (readers.layouts)."""
    box: tuple[int, int, int, int]
    """x, y, width, height in EMU."""

    @property
    def area(self) -> int:
        return self.box[2] * self.box[3]


class Layout(BaseModel):
    master: int
    index: int
    """Its place among its master's layouts."""
    name: str
    placeholders: list[Placeholder]

    def of_kind(self, kind: PlaceholderKind) -> list[Placeholder]:
        return [p for p in self.placeholders if p.kind == kind]


class TemplateLayouts(BaseModel):
    """What the isolated reader found in the file."""

    width: int
    height: int
    layouts: list[Layout]


class LayoutPage(BaseModel):
    """Where one page type goes: a layout, and the placeholder (by idx) each field fills."""

    page_type: PageType
    master: int
    layout: int
    name: str
    slots: dict[str, int]
    """Field name to placeholder (`Placeholder.idx`); a `table` or `chart` field takes its
    placeholder's box."""
    boxes: dict[str, tuple[int, int, int, int]]
    """Field name to its placeholder's box as the layout has it: given to the slide's shape
    outright, since a slide's placeholder finds the layout's by `idx`, which a file may not
    set (LibreOffice's has every one 0)."""


class LayoutPlan(BaseModel):
    pages: dict[str, LayoutPage]
    text_fallback: LayoutPage
    """Where an image_text slide goes when no picture is drawn for it: the content layout,
    its body taking the slide's text."""


class UnusableTemplate(Exception):
    """The template lacks what the builder needs; `str()` names what is missing."""


def match(found: TemplateLayouts, code: str, name: str) -> tuple[TemplateSpec, LayoutPlan]:
    """The spec and the layout plan of an uploaded template; raises `UnusableTemplate`."""
    slide_area = max(found.width * found.height, 1)
    layouts = [layout for layout in found.layouts if len(layout.of_kind("title")) == 1]
    if not layouts:
        raise UnusableTemplate(
            "The template cannot be used: none of its layouts has a title placeholder."
        )

    def large(layout: Layout) -> list[Placeholder]:
        return [p for p in layout.of_kind("body") if p.area >= LARGE_BODY * slide_area]

    def small(layout: Layout) -> list[Placeholder]:
        return [p for p in layout.of_kind("body") if p.area < LARGE_BODY * slide_area]

    content = _best(
        (lay for lay in layouts if len(large(lay)) == 1 and not lay.of_kind("picture")),
        lambda lay: large(lay)[0].area,
    )
    if content is None:
        raise UnusableTemplate(
            "The template cannot be used: it has no layout with a title and one large body"
            " placeholder (like PowerPoint's 'Title and Content'), which the builder needs"
            " for its content slides."
        )
    body = large(content)[0]
    pages: dict[str, LayoutPage] = {}
    fields: dict[str, list[FieldSpec]] = {}

    def put(
        kind: PageType, layout: Layout, slots: dict[str, Placeholder], specs: list[FieldSpec]
    ) -> None:
        pages[kind] = LayoutPage(
            page_type=kind,
            master=layout.master,
            layout=layout.index,
            name=layout.name,
            slots={field: p.idx for field, p in slots.items()},
            boxes={field: p.box for field, p in slots.items()},
        )
        fields[kind] = specs

    title = content.of_kind("title")[0]
    title_field = _text("title", title, TITLE_PT, 60)
    put(
        "agenda",
        content,
        {"title": title, "items": body},
        [title_field, _bullets("items", body, 60)],
    )
    put(
        "bullets",
        content,
        {"title": title, "bullets": body},
        [title_field, _bullets("bullets", body, 110)],
    )
    put("table", content, {"title": title, "table": body}, [title_field, TABLE_FIELD])
    put("chart", content, {"title": title, "chart": body}, [title_field, CHART_FIELD])

    two = _best(
        (lay for lay in layouts if _columns(lay) and not lay.of_kind("picture")),
        # Columns with their headings first, then two columns alone, then any with columns.
        lambda lay: 2 if _headings(lay) else int(len(lay.of_kind("body")) == 2),
    )
    if two is not None:
        left, right = _columns(two)
        headings = _headings(two)
        slots = {"title": two.of_kind("title")[0]}
        specs = [_text("title", slots["title"], TITLE_PT, 60)]
        for side, points, number in (("left", left, 0), ("right", right, 1)):
            if len(headings) == 2:
                slots[f"{side}_heading"] = headings[number]
                specs.append(_text(f"{side}_heading", headings[number], TEXT_PT, 30))
            slots[f"{side}_points"] = points
            specs.append(_bullets(f"{side}_points", points, 80, most_items=4))
        put("comparison", two, slots, specs)

    pictured = _best(
        (lay for lay in layouts if len(lay.of_kind("picture")) == 1 and lay.of_kind("body")),
        lambda lay: lay.of_kind("picture")[0].area,
    )
    text_fallback = LayoutPage(
        page_type="image_text",
        master=content.master,
        layout=content.index,
        name=content.name,
        slots={"title": title.idx, "body": body.idx},
        boxes={"title": title.box, "body": body.box},
    )
    if pictured is not None:
        words = max(pictured.of_kind("body"), key=lambda p: p.area)
        slots = {"title": pictured.of_kind("title")[0], "body": words}
        specs = [_text("title", slots["title"], TITLE_PT, 60), _text("body", words, TEXT_PT, 320)]
        put("image_text", pictured, slots, specs)
        frame = pictured.of_kind("picture")[0]
        pages["image_text"].slots["picture"] = frame.idx
        pages["image_text"].boxes["picture"] = frame.box
    else:
        put(
            "image_text",
            content,
            {"title": title, "body": body},
            [title_field, _text("body", body, TEXT_PT, 320)],
        )

    covers = [lay for lay in layouts if lay.of_kind("subtitle") and not lay.of_kind("picture")]
    cover = _best(covers, lambda lay: -len(lay.placeholders))
    divider = _best(
        (
            lay
            for lay in layouts
            if len(small(lay)) == 1 and not large(lay) and not lay.of_kind("picture")
        ),
        lambda lay: -len(lay.placeholders),
    )
    for kind, layout in (
        ("cover", cover or divider),
        ("section", divider or cover),
        ("closing", cover or divider),
    ):
        chosen = layout or content
        heading = chosen.of_kind("title")[0]
        under = (chosen.of_kind("subtitle") or small(chosen) or large(chosen))[:1]
        slots = {"title": heading} | ({"subtitle": under[0]} if under else {})
        specs = [_text("title", heading, TITLE_PT + 8, 60)]
        specs += [_text("subtitle", under[0], TEXT_PT, 120)] if under else []
        put(kind, chosen, slots, specs)  # type: ignore[arg-type]

    spec = TemplateSpec(
        code=code,
        name=name,
        description="your own template",
        style_tags=["custom"],
        fonts=[],
        palette=[],
        pages=[
            PageSpec(page_type=kind, index=0, purpose=_PURPOSES[kind], fields=fields[kind])
            for kind in _PURPOSES
            if kind in pages
        ],
    )
    return spec, LayoutPlan(pages=pages, text_fallback=text_fallback)


_PURPOSES: dict[PageType, str] = {
    "cover": "first slide: the deck's title and a subtitle",
    "agenda": "the list of the deck's parts",
    "section": "a divider opening a part of the talk",
    "bullets": "a title and a few points",
    "comparison": "two things side by side, points for each",
    "image_text": "a picture beside a paragraph (the paragraph alone when no picture is drawn)",
    "table": "a table of data: a header row and up to five rows, up to four columns",
    "chart": "a chart of numbers: categories and one to three series of values",
    "closing": "last slide: a closing line and where to go next",
}


def _best(layouts: Iterable[Layout], score: Callable[[Layout], int]) -> Layout | None:
    return max(layouts, key=score, default=None)


def _width(layout: Layout) -> int:
    return sum(p.box[2] for p in layout.of_kind("body"))


def _columns(layout: Layout) -> list[Placeholder]:
    """The two largest bodies side by side (left first), when the layout has such a pair."""
    bodies = sorted(layout.of_kind("body"), key=lambda p: p.area, reverse=True)[:2]
    if len(bodies) != 2:
        return []
    left, right = sorted(bodies, key=lambda p: p.box[0])
    beside = left.box[0] + left.box[2] <= right.box[0] + right.box[2] // 2
    alike = 0.75 <= left.box[2] / max(right.box[2], 1) <= 1.33
    return [left, right] if beside and alike else []


def _headings(layout: Layout) -> list[Placeholder]:
    """The two bodies over a layout's columns that head them (left first), when it has them:
    exactly two more, each short and ending above its column."""
    columns = _columns(layout)
    others = [p for p in layout.of_kind("body") if p not in columns]
    if not columns or len(others) != 2:
        return []
    heads = sorted(others, key=lambda p: p.box[0])
    for head, column in zip(heads, columns, strict=True):
        if head.box[1] + head.box[3] > column.box[1] + column.box[3] // 10:
            return []
        if head.box[3] * 2 > column.box[3]:
            return []
    return heads


def _lines(box: tuple[int, int, int, int], size: int) -> tuple[int, int]:
    """Characters a line and lines a box holds at `size` points."""
    width, height = box[2] / EMU_PER_PT, box[3] / EMU_PER_PT
    return max(int(width / (size * 0.55)), 8), max(int(height / (size * 1.3)), 1)


def _text(name: str, at: Placeholder, size: int, most: int) -> FieldSpec:
    """A budget for the box at `size` points, not under half of `most`: a template's own
    smaller font (a caption's) holds more, and text past the box shrinks to fit."""
    per_line, lines = _lines(at.box, size)
    return FieldSpec(name=name, kind="text", budget=max(min(most, per_line * lines), most // 2))


def _bullets(name: str, at: Placeholder, most: int, most_items: int = 6) -> FieldSpec:
    per_line, lines = _lines(at.box, BULLET_PT)
    items = max(min(most_items, lines // 2), 2)
    return FieldSpec(
        name=name, kind="bullets", budget=max(min(most, per_line * 2), 20), max_items=items
    )
