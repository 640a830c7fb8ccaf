"""Draws a validated deck on its template with python-pptx, and reads a deck back.

Blocking code, run in a worker thread. For each slide of the deck the
template's slide for that page type is copied (background and shapes; the
shipped templates have no pictures or charts, so no relationships to carry),
its named shapes filled keeping the template's formatting, and finally the
template's own slides are dropped so none is left over. The deadline is
checked between slides: a worker thread cannot be killed, so it stops
itself, and the caller's time limit (or a stop) means the work really ends.

A finished deck is reopened with python-pptx (`read_deck`) before it is
stored, so what the user downloads is known to open.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image
from pptx import Presentation
from pptx.oxml.ns import qn
from pptx.oxml.xmlchemy import BaseOxmlElement
from pptx.presentation import Presentation as Deck
from pptx.shapes.base import BaseShape
from pptx.slide import Slide
from pptx.util import Emu

from app.agents.pptx.schema import DeckSchema, FieldValue, TableData
from app.agents.pptx.templates import TemplateSpec


class RenderTimeout(Exception):
    """The deck was not drawn before the deadline."""


class RenderError(Exception):
    """The deck could not be drawn, or the result does not read back."""


@dataclass(frozen=True, slots=True)
class SlideText:
    """One slide of a finished deck as it reads back: each named shape's text."""

    fields: dict[str, str]

    @property
    def title(self) -> str:
        return self.fields.get("title", "")


def render_deck(
    template: Path,
    spec: TemplateSpec,
    deck: DeckSchema,
    expired: Callable[[], bool],
    pictures: dict[int, bytes] | None = None,
) -> bytes:
    """The .pptx bytes; `expired()` says when to give up (past the deadline, or stopped).

    `pictures` are images by slide index (0-based), each placed over its page's
    `picture` shape; a page without one ignores them.
    """
    prs = Presentation(str(template))
    originals = list(prs.slides)
    for index, schema in enumerate(deck.slides):
        if expired():
            raise RenderTimeout
        page = spec.page(schema.page_type)
        if page is None:
            raise RenderError(f"no {schema.page_type} page in template {spec.code}")
        slide = _copy_slide(prs, originals[page.index])
        shapes = {shape.name: shape for shape in slide.shapes}
        for name, value in schema.fields.items():
            _fill(shapes[name], value)
        picture = (pictures or {}).get(index)
        if picture is not None and page.picture in shapes:
            _place_picture(slide, shapes[page.picture], picture)
    slide_ids = prs.slides._sldIdLst
    for slide_id in list(slide_ids)[: len(originals)]:
        prs.part.drop_rel(slide_id.rId)
        slide_ids.remove(slide_id)
    out = io.BytesIO()
    prs.save(out)
    return out.getvalue()


def read_deck(data: bytes) -> list[SlideText]:
    """The deck's slides as python-pptx reads them back; raises `RenderError` if it cannot."""
    try:
        prs = Presentation(io.BytesIO(data))
    except Exception as exc:  # python-pptx raises many kinds on a broken package
        raise RenderError(f"the deck does not open: {type(exc).__name__}") from exc
    slides = []
    for slide in prs.slides:
        fields = {}
        for shape in slide.shapes:
            if shape.name.startswith("deco-"):
                continue
            if shape.has_table:
                cells = [c.text for row in shape.table.rows for c in row.cells]
                fields[shape.name] = "\n".join(cells)
            elif shape.has_text_frame:
                fields[shape.name] = shape.text_frame.text
        slides.append(SlideText(fields))
    return slides


def _copy_slide(prs: Deck, source: Slide) -> Slide:
    slide = prs.slides.add_slide(source.slide_layout)
    tree = slide.shapes._spTree
    for placeholder in list(slide.placeholders):
        tree.remove(placeholder._element)
    background = source._element.cSld.find(qn("p:bg"))
    if background is not None:
        slide._element.cSld.insert(0, copy.deepcopy(background))
    for shape in source.shapes:
        tree.insert_element_before(copy.deepcopy(shape._element), "p:extLst")
    return slide


def _place_picture(slide: Slide, frame: BaseShape, data: bytes) -> None:
    """The picture over `frame`'s box, cropped (not squashed) to fill it."""
    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    picture = slide.shapes.add_picture(
        io.BytesIO(data), frame.left, frame.top, frame.width, frame.height
    )
    picture.name = "picture"
    box_ratio, image_ratio = frame.width / frame.height, width / height
    if image_ratio > box_ratio:
        picture.crop_left = picture.crop_right = (1 - box_ratio / image_ratio) / 2
    else:
        picture.crop_top = picture.crop_bottom = (1 - image_ratio / box_ratio) / 2


def _fill(shape: BaseShape, value: FieldValue) -> None:
    if isinstance(value, TableData):
        _fill_table(shape, value)
        return
    lines = [value] if isinstance(value, str) else value
    body = shape.text_frame._txBody  # type: ignore[attr-defined]
    paragraphs = body.findall(qn("a:p"))
    prototype = paragraphs[0]
    for paragraph in paragraphs:
        body.remove(paragraph)
    for line in lines:
        paragraph = copy.deepcopy(prototype)
        _set_text(paragraph, line)
        body.append(paragraph)


def _fill_table(shape: BaseShape, data: TableData) -> None:
    table = shape.table  # type: ignore[attr-defined]
    tbl = table._tbl
    rows = [data.header, *data.rows]
    for row in tbl.tr_lst[len(rows) :]:
        tbl.remove(row)
    columns = len(data.header)
    for grid_column in tbl.tblGrid.gridCol_lst[columns:]:
        tbl.tblGrid.remove(grid_column)
    for row in tbl.tr_lst:
        for cell in row.tc_lst[columns:]:
            row.remove(cell)
    width = shape.width // columns
    for column in table.columns:
        column.width = Emu(width)
    for row_cells, values in zip(table.rows, rows, strict=True):
        for cell, text in zip(row_cells.cells, values, strict=True):
            _set_text(cell.text_frame.paragraphs[0]._p, text)
    shape.height = Emu(sum(row.height for row in table.rows))


def _set_text(paragraph: BaseOxmlElement, text: str) -> None:
    """Put `text` in the paragraph's first run, keeping its formatting; drop the other runs."""
    runs = paragraph.findall(qn("a:r"))
    for extra in [*runs[1:], *paragraph.findall(qn("a:br")), *paragraph.findall(qn("a:fld"))]:
        paragraph.remove(extra)
    runs[0].find(qn("a:t")).text = text
