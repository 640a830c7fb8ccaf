"""Writes the shipped templates: `.venv/bin/python scripts/design_templates.py [folder]`.

A build-time tool, outside the app package: the service only reads what it
wrote (app/agents/pptx/templates/).

Each `Look` is a palette, two fonts and a structure: `bar` (the title on
top, a bar down the left), `side` (the title in a dark column on the left,
the content beside it; a split cover) or `rule` (centred titles over a
rule). Every look gets the same nine page types, so any outline fits any
template, and a text version of the picture page (`PageSpec.text_index`),
drawn when no picture is: a statement panel, not an empty frame. Content
fills its page: a table's rows share the page's height, comparison points
start under their headings, lists are sized and spaced to their box by the
renderer, a chart takes the whole body. Shapes the model fills are
named after their field and listed, with their budgets, in the template's
JSON spec; decorative shapes are named `deco-…` and never touched. The
sample text on each shape shows a designer what goes there.

Budgets are set for the font size and box, so text within them fits
without shrinking; the box still shrinks text on overflow as a safety net.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.enum.shapes import MSO_SHAPE
from pptx.enum.text import MSO_ANCHOR, MSO_AUTO_SIZE, PP_ALIGN
from pptx.oxml.xmlchemy import BaseOxmlElement, OxmlElement
from pptx.slide import Slide
from pptx.text.text import TextFrame, _Run
from pptx.util import Emu, Inches, Pt

from app.agents.pptx.templates import (
    PAGE_TYPES,
    TEMPLATES_DIR,
    FieldSpec,
    PageSpec,
    PageType,
    TemplateSpec,
)

WIDTH, HEIGHT = Inches(13.333), Inches(7.5)
MARGIN = Inches(0.8)
BLANK_LAYOUT = 6

Frame = Literal["bar", "side", "rule"]


@dataclass(frozen=True, slots=True)
class Look:
    code: str
    name: str
    description: str
    style_tags: tuple[str, ...]
    frame: Frame
    background: str
    dark: str
    """The cover's and dividers' background."""
    text: str
    muted: str
    accent: str
    accent_soft: str
    heading_font: str
    body_font: str

    @property
    def title_color(self) -> str:
        return "FFFFFF" if self.frame == "side" else self.dark


LOOKS = (
    Look(
        "ocean",
        "Ocean",
        "navy and teal, a bar down the left, clean sans-serif: business and science",
        ("professional", "calm", "corporate", "technical"),
        "bar",
        background="F4F8FB",
        dark="0B2545",
        text="1B2A3A",
        muted="5C6B7A",
        accent="13A89E",
        accent_soft="D4F1EE",
        heading_font="Calibri Light",
        body_font="Calibri",
    ),
    Look(
        "ember",
        "Ember",
        "charcoal, titles in a dark side column, orange accents, serif headings: bold talks"
        " and pitches",
        ("bold", "dramatic", "dark", "marketing"),
        "side",
        background="2B2622",
        dark="1A1613",
        text="F3EDE7",
        muted="C9B8A8",
        accent="E4572E",
        accent_soft="4A3A30",
        heading_font="Georgia",
        body_font="Verdana",
    ),
    Look(
        "paper",
        "Paper",
        "warm cream, centred titles over a green rule, friendly type: teaching and workshops",
        ("friendly", "education", "light", "minimal"),
        "rule",
        background="FBF7EF",
        dark="2F4A3A",
        text="2E2A26",
        muted="6E665C",
        accent="3E8E5E",
        accent_soft="E3EFE4",
        heading_font="Trebuchet MS",
        body_font="Trebuchet MS",
    ),
)


def _rgb(value: str) -> RGBColor:
    return RGBColor.from_string(value)


class PageBuilder:
    """Adds one page's shapes to a slide and records its fillable fields."""

    def __init__(self, look: Look, slide: Slide) -> None:
        self.look = look
        self.slide = slide
        self.fields: list[FieldSpec] = []

    def rect(self, name: str, x: int, y: int, w: int, h: int, color: str) -> None:
        shape = self.slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, Emu(x), Emu(y), Emu(w), Emu(h))
        shape.name = name
        shape.fill.solid()
        shape.fill.fore_color.rgb = _rgb(color)
        shape.line.fill.background()
        shape.shadow.inherit = False

    def background(self, color: str) -> None:
        fill = self.slide.background.fill
        fill.solid()
        fill.fore_color.rgb = _rgb(color)

    def text(
        self,
        name: str,
        box: tuple[int, int, int, int],
        sample: str,
        *,
        budget: int,
        size: int,
        color: str,
        heading: bool = False,
        align: PP_ALIGN = PP_ALIGN.LEFT,
        anchor: MSO_ANCHOR = MSO_ANCHOR.TOP,
    ) -> None:
        frame = self._frame(name, box, anchor)
        paragraph = frame.paragraphs[0]
        paragraph.alignment = align
        self._run(paragraph.add_run(), sample, size, color, heading)
        self.fields.append(FieldSpec(name=name, kind="text", budget=budget))

    def bullets(
        self,
        name: str,
        box: tuple[int, int, int, int],
        samples: list[str],
        *,
        budget: int,
        size: int,
        color: str,
        max_items: int,
        anchor: MSO_ANCHOR = MSO_ANCHOR.TOP,
    ) -> None:
        frame = self._frame(name, box, anchor)
        for index, sample in enumerate(samples):
            paragraph = frame.paragraphs[0] if index == 0 else frame.add_paragraph()
            paragraph.space_after = Pt(size * 0.6)
            p_pr = paragraph._p.get_or_add_pPr()
            p_pr.set("marL", str(Emu(Pt(size * 1.3))))
            p_pr.set("indent", str(-Emu(Pt(size * 1.3))))
            colour = OxmlElement("a:buClr")
            colour.append(_srgb(self.look.accent))
            char = OxmlElement("a:buChar")
            char.set("char", "•")
            p_pr.append(colour)
            p_pr.append(char)
            self._run(paragraph.add_run(), sample, size, color, heading=False)
        self.fields.append(FieldSpec(name=name, kind="bullets", budget=budget, max_items=max_items))

    def table(self, box: tuple[int, int, int, int], rows: int, columns: int, budget: int) -> None:
        x, y, w, h = box
        # The full height: the renderer shares it between the rows the data has.
        shape = self.slide.shapes.add_table(rows, columns, Emu(x), Emu(y), Emu(w), Emu(h))
        shape.name = "table"
        look = self.look
        for r, row in enumerate(shape.table.rows):
            for c, cell in enumerate(row.cells):
                cell.fill.solid()
                header = r == 0
                shade = look.accent if header else (look.accent_soft if r % 2 else look.background)
                cell.fill.fore_color.rgb = _rgb(shade)
                cell.margin_left = cell.margin_right = Inches(0.12)
                paragraph = cell.text_frame.paragraphs[0]
                sample = f"Heading {c + 1}" if header else f"Value {r}.{c + 1}"
                color = "FFFFFF" if header else look.text
                self._run(paragraph.add_run(), sample, 18, color, heading=header)
        self.fields.append(
            FieldSpec(
                name="table", kind="table", budget=budget, max_items=rows, max_columns=columns
            )
        )

    def chart(self, box: tuple[int, int, int, int]) -> None:
        """Where the chart goes: an empty box the renderer replaces with a native chart."""
        shape = self.slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, *(Emu(v) for v in box))
        shape.name = "chart"
        shape.fill.background()
        shape.line.fill.background()
        self.fields.append(
            FieldSpec(name="chart", kind="chart", budget=30, max_items=8, max_columns=3)
        )

    def _frame(self, name: str, box: tuple[int, int, int, int], anchor: MSO_ANCHOR) -> TextFrame:
        shape = self.slide.shapes.add_textbox(*(Emu(v) for v in box))
        shape.name = name
        frame = shape.text_frame
        frame.word_wrap = True
        frame.vertical_anchor = anchor
        frame.auto_size = MSO_AUTO_SIZE.TEXT_TO_FIT_SHAPE
        return frame

    def _run(self, run: _Run, text: str, size: int, color: str, heading: bool) -> None:
        run.text = text
        font = run.font
        font.size = Pt(size)
        font.name = self.look.heading_font if heading else self.look.body_font
        font.bold = heading and self.look.frame == "bar"
        font.color.rgb = _rgb(color)


def _srgb(value: str) -> BaseOxmlElement:
    element = OxmlElement("a:srgbClr")
    element.set("val", value)
    return element


Box = tuple[int, int, int, int]


def _content_frame(page: PageBuilder, title_sample: str) -> Box:
    """Draw the look's frame and title; the box the body fills."""
    look = page.look
    width = WIDTH - 2 * MARGIN
    bottom = HEIGHT - Inches(0.6)
    if look.frame == "bar":
        page.rect("deco-bar", 0, 0, Inches(0.28), HEIGHT, look.accent)
        page.text(
            "title", (MARGIN, Inches(0.45), width, Inches(0.95)), title_sample,
            budget=60, size=34, color=look.title_color, heading=True, anchor=MSO_ANCHOR.MIDDLE,
        )  # fmt: skip
        page.rect("deco-underline", MARGIN, Inches(1.45), Inches(1.2), Inches(0.06), look.accent)
        return MARGIN, Inches(1.8), width, bottom - Inches(1.8)
    if look.frame == "side":
        column = Inches(3.9)
        page.rect("deco-column", 0, 0, column, HEIGHT, look.dark)
        page.rect("deco-notch", Inches(0.6), Inches(0.9), Inches(0.9), Inches(0.08), look.accent)
        page.text(
            "title", (Inches(0.6), Inches(1.2), column - Inches(1.0), Inches(4.6)), title_sample,
            budget=60, size=32, color=look.title_color, heading=True,
        )  # fmt: skip
        x = column + Inches(0.6)
        return x, Inches(0.8), WIDTH - x - Inches(0.6), HEIGHT - Inches(1.5)
    page.text(
        "title", (MARGIN, Inches(0.4), width, Inches(0.95)), title_sample,
        budget=60, size=34, color=look.title_color, heading=True,
        align=PP_ALIGN.CENTER, anchor=MSO_ANCHOR.MIDDLE,
    )  # fmt: skip
    page.rect("deco-rule", Inches(5.67), Inches(1.45), Inches(2.0), Inches(0.05), look.accent)
    return MARGIN, Inches(1.85), width, bottom - Inches(1.85)


def _statement(page: PageBuilder, kind: PageType) -> None:
    """Cover, section divider and closing: a big title on the dark colour, a line under it."""
    look = page.look
    page.background(look.dark)
    budgets = {"cover": (60, 120), "section": (50, 110), "closing": (40, 120)}[kind]
    samples = {
        "cover": ("Presentation title", "Subtitle, speaker and date"),
        "section": ("Section title", "What this part of the talk covers"),
        "closing": ("Thank you", "Questions, contacts and next steps"),
    }[kind]
    width = WIDTH - 2 * MARGIN
    centred = look.frame == "rule"
    align = PP_ALIGN.CENTER if centred else PP_ALIGN.LEFT
    size = 48 if kind != "section" else 40
    if look.frame == "side":
        # A split page: the words on the left, a block of colour on the right.
        split = Inches(8.4)
        page.rect("deco-block", split, 0, WIDTH - split, HEIGHT, look.accent)
        page.rect("deco-block-line", split - Inches(0.25), 0, Inches(0.08), HEIGHT, look.accent)
        page.text(
            "title", (MARGIN, Inches(1.4), split - MARGIN - Inches(0.7), Inches(2.9)),
            samples[0], budget=budgets[0], size=size, color="FFFFFF", heading=True,
            anchor=MSO_ANCHOR.BOTTOM,
        )  # fmt: skip
        page.text(
            "subtitle", (MARGIN, Inches(4.6), split - MARGIN - Inches(0.7), Inches(1.6)),
            samples[1], budget=budgets[1], size=20, color=look.muted,
        )  # fmt: skip
        return
    if look.frame == "bar":
        page.rect("deco-bar", 0, 0, Inches(0.6), HEIGHT, look.accent)
    else:
        page.rect("deco-block", Inches(4.67), Inches(4.3), Inches(4.0), Inches(0.08), look.accent)
    page.text(
        "title", (MARGIN + Inches(0.4), Inches(1.9), width - Inches(0.4), Inches(2.2)), samples[0],
        budget=budgets[0], size=size, color="FFFFFF", heading=True, align=align,
        anchor=MSO_ANCHOR.BOTTOM,
    )  # fmt: skip
    page.text(
        "subtitle", (MARGIN + Inches(0.4), Inches(4.5), width - Inches(0.4), Inches(1.0)),
        samples[1], budget=budgets[1], size=20, color=look.accent_soft, align=align,
    )  # fmt: skip


def _page(look: Look, kind: PageType, page: PageBuilder, *, pictured: bool = True) -> str:
    """Build one page type; its purpose, as the model will read it. `pictured` False: the
    picture page's text version."""
    if kind in ("cover", "section", "closing"):
        _statement(page, kind)
        return {
            "cover": "first slide: the deck's title and a subtitle",
            "section": "a divider opening a part of the talk",
            "closing": "last slide: a closing line and where to go next",
        }[kind]
    x, top, body_width, height = _content_frame(page, {"agenda": "Agenda"}.get(kind, "Slide title"))
    narrow = look.frame == "side"
    # The renderer sizes and spaces a list to its box (app/agents/pptx/spread.py); what is
    # left sits above and below it, so a short list is not crowded under the title.
    anchor = MSO_ANCHOR.MIDDLE
    if kind == "agenda":
        page.bullets(
            "items", (x, top, body_width, height), ["First part", "Second part", "Third"],
            budget=60, size=24, color=look.text, max_items=6, anchor=anchor,
        )  # fmt: skip
        return "the list of the deck's parts"
    if kind == "bullets":
        page.bullets(
            "bullets", (x, top, body_width, height),
            ["A key point in one line", "Another point, with a detail", "A third point"],
            budget=110 if not narrow else 90, size=22 if not narrow else 20, color=look.text,
            max_items=6, anchor=anchor,
        )  # fmt: skip
        return "a title and up to six points"
    if kind == "comparison":
        _comparison(page, (x, top, body_width, height))
        return "two things side by side, a heading and up to four points each"
    if kind == "image_text":
        _image_text(page, (x, top, body_width, height), pictured)
        return (
            "a picture (or, with none, a highlighted statement panel) with a short caption,"
            " beside a paragraph"
        )
    if kind == "chart":
        page.chart((x, top, body_width, height))
        return "a chart of numbers: categories and one to three series of values"
    page.table((x, top, body_width, height), rows=6, columns=4, budget=40 if not narrow else 30)
    return "a table of data: a header row and up to five rows, up to four columns"


def _comparison(page: PageBuilder, box: Box) -> None:
    """Two panels the height of the body, their points under the heading (the renderer
    spaces them down the panel)."""
    look = page.look
    x0, top, width, height = box
    half = (width - Inches(0.5)) // 2
    for side, x in (("left", x0), ("right", x0 + half + Inches(0.5))):
        page.rect(f"deco-{side}-panel", x, top, half, height, look.accent_soft)
        page.rect(f"deco-{side}-edge", x, top, half, Inches(0.08), look.accent)
        heading_color = look.accent if look.frame != "side" else look.text
        page.text(
            f"{side}_heading", (x + Inches(0.35), top + Inches(0.3), half - Inches(0.7),
            Inches(0.8)), f"{side.title()} option", budget=30, size=26, color=heading_color,
            heading=True,
        )  # fmt: skip
        page.bullets(
            f"{side}_points", (x + Inches(0.35), top + Inches(1.2), half - Inches(0.7),
            height - Inches(1.5)), ["A strength", "A weakness"], budget=80, size=20,
            color=look.text, max_items=4,
        )  # fmt: skip


def _image_text(page: PageBuilder, box: Box, pictured: bool) -> None:
    """A framed picture area with its caption under it, or (no picture) the caption as a
    large statement on a panel of the accent colour; the paragraph beside either."""
    look = page.look
    x0, top, width, height = box
    visual = min(Inches(4.6), width // 2)
    if pictured:
        page.rect("deco-visual", x0, top, visual, height, look.accent)
        page.rect(
            "deco-visual-inset", x0 + Inches(0.3), top + Inches(0.3), visual - Inches(0.6),
            height - Inches(1.6), look.accent_soft,
        )  # fmt: skip
        page.text(
            "caption", (x0 + Inches(0.3), top + height - Inches(1.2), visual - Inches(0.6),
            Inches(1.0)), "A short caption", budget=60, size=16, color="FFFFFF",
            anchor=MSO_ANCHOR.MIDDLE,
        )  # fmt: skip
    else:
        page.rect("deco-statement", x0, top, visual, height, look.accent)
        page.rect("deco-quote", x0 + Inches(0.45), top + Inches(0.5), Inches(0.7), Inches(0.1),
                  "FFFFFF")  # fmt: skip
        page.text(
            "caption", (x0 + Inches(0.45), top + Inches(0.8), visual - Inches(0.9),
            height - Inches(1.3)), "A short statement", budget=60, size=30, color="FFFFFF",
            heading=True, anchor=MSO_ANCHOR.MIDDLE,
        )  # fmt: skip
    x = x0 + visual + Inches(0.5)
    page.text(
        "body", (x, top, width - visual - Inches(0.5), height),
        "A paragraph that explains the idea the visual stands for.", budget=320,
        size=20 if look.frame != "side" else 18, color=look.text, anchor=MSO_ANCHOR.MIDDLE,
    )  # fmt: skip


def build_template(look: Look, folder: Path) -> TemplateSpec:
    """Write `<code>.pptx` and `<code>.json` for one look into `folder`."""
    deck = Presentation()
    deck.slide_width, deck.slide_height = WIDTH, HEIGHT
    master_fill = deck.slide_master.background.fill
    master_fill.solid()
    master_fill.fore_color.rgb = _rgb(look.background)
    pages = []
    for index, kind in enumerate(PAGE_TYPES):
        slide = deck.slides.add_slide(deck.slide_layouts[BLANK_LAYOUT])
        page = PageBuilder(look, slide)
        purpose = _page(look, kind, page)
        picture = "deco-visual-inset" if kind == "image_text" else None
        pages.append(
            PageSpec(
                page_type=kind, index=index, purpose=purpose, fields=page.fields, picture=picture
            )
        )
    # The picture page's text version, last: drawn for a picture slide with no picture.
    text_version = PageBuilder(look, deck.slides.add_slide(deck.slide_layouts[BLANK_LAYOUT]))
    _page(look, "image_text", text_version, pictured=False)
    pictured = next(p for p in pages if p.page_type == "image_text")
    pictured.text_index = len(PAGE_TYPES)
    spec = TemplateSpec(
        code=look.code,
        name=look.name,
        description=look.description,
        style_tags=list(look.style_tags),
        fonts=[look.heading_font, look.body_font],
        palette=[look.background, look.dark, look.text, look.accent, look.accent_soft],
        pages=pages,
    )
    folder.mkdir(parents=True, exist_ok=True)
    deck.save(str(folder / f"{look.code}.pptx"))
    (folder / f"{look.code}.json").write_text(spec.model_dump_json(indent=2) + "\n", "utf-8")
    return spec


def main(argv: list[str]) -> None:
    folder = Path(argv[0]) if argv else TEMPLATES_DIR
    for look in LOOKS:
        build_template(look, folder)
        print(f"wrote {folder / look.code}.pptx and .json")


if __name__ == "__main__":
    main(sys.argv[1:])
