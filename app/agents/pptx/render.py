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
from typing import Any

from PIL import Image
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.dml.color import RGBColor
from pptx.enum.chart import XL_CHART_TYPE, XL_LEGEND_POSITION
from pptx.enum.text import MSO_ANCHOR
from pptx.oxml.ns import qn
from pptx.oxml.xmlchemy import BaseOxmlElement
from pptx.presentation import Presentation as Deck
from pptx.shapes.base import BaseShape
from pptx.slide import Slide
from pptx.util import Emu, Pt

from app.agents.pptx.schema import ChartData, DeckSchema, TableData
from app.agents.pptx.spread import spread
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
        picture = (pictures or {}).get(index)
        source = page.index if picture is not None or page.text_index is None else page.text_index
        slide = _copy_slide(prs, originals[source])
        shapes = {shape.name: shape for shape in slide.shapes}
        for name, value in schema.fields.items():
            if name not in shapes:
                continue  # a field the text layout has no place for (a picture's caption)
            if isinstance(value, ChartData):
                add_chart(slide, shapes[name], value, spec.palette)
                shapes[name]._element.getparent().remove(shapes[name]._element)
            else:
                _fill(shapes[name], value)
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
            elif shape.has_chart:
                plot = shape.chart.plots[0]
                fields[shape.name] = "\n".join(str(c) for c in plot.categories)
            elif shape.has_text_frame:
                fields[shape.name] = shape.text_frame.text
        slides.append(SlideText(fields))
    return slides


def kept_pictures(data: bytes, changed: int) -> dict[int, bytes]:
    """The pictures of a finished deck by slide index, but slide `changed`'s: what a
    one-slide edit keeps rather than drawing them again."""
    prs = Presentation(io.BytesIO(data))
    kept = {}
    for index, slide in enumerate(prs.slides):
        pictures = [s for s in slide.shapes if s.name == "picture" and hasattr(s, "image")]
        if index != changed and pictures:
            kept[index] = pictures[0].image.blob
    return kept


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


def _fill(shape: BaseShape, value: str | list[str] | TableData) -> None:
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
    if isinstance(value, list):
        spread(body, (shape.width, shape.height), lines)


def _fill_table(shape: BaseShape, data: TableData) -> None:
    """The table's rows cut to the data's, sharing the frame's height between them: a short
    table still fills its box rather than leaving the slide's lower part empty."""
    table = shape.table  # type: ignore[attr-defined]
    tbl = table._tbl
    rows = [data.header, *data.rows]
    height = sum(row.height for row in table.rows)
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
        row_cells.height = Emu(height // len(rows))
        for cell, text in zip(row_cells.cells, values, strict=True):
            cell.vertical_anchor = MSO_ANCHOR.MIDDLE
            _set_text(cell.text_frame.paragraphs[0]._p, text)
    shape.height = Emu(height)


def fill_table(table: Any, data: TableData) -> None:
    """A fresh python-pptx table (as many rows and columns as `data`) filled with it."""
    for row_cells, values in zip(table.rows, [data.header, *data.rows], strict=True):
        for cell, text in zip(row_cells.cells, values, strict=True):
            cell.vertical_anchor = MSO_ANCHOR.MIDDLE
            cell.text = text


_CHART_TYPES = {
    "bar": XL_CHART_TYPE.COLUMN_CLUSTERED,
    "line": XL_CHART_TYPE.LINE_MARKERS,
    "pie": XL_CHART_TYPE.PIE,
}


def add_chart(slide: Slide, frame: BaseShape, data: ChartData, palette: list[str]) -> None:
    """A native chart in `frame`'s box (the frame itself is the caller's to remove).

    `palette` (background, dark, text, accent, soft accent) colours the series
    and the labels; empty (a user's template), the theme's colours do.
    """
    values = CategoryChartData()
    values.categories = data.categories
    for series in data.series:
        values.add_series(series.name, series.values)
    # python-pptx's stubs say a `Chart` comes back; it is the graphic frame holding one.
    graphic: Any = slide.shapes.add_chart(
        _CHART_TYPES[data.chart_type],
        frame.left,
        frame.top,
        frame.width,
        frame.height,
        values,  # type: ignore[arg-type]
    )
    graphic.name = "chart"
    chart = graphic.chart
    chart.has_legend = len(data.series) > 1 or data.chart_type == "pie"
    if chart.has_legend:
        chart.legend.include_in_layout = False
        chart.legend.position = XL_LEGEND_POSITION.BOTTOM
    chart.font.size = Pt(14)
    if not palette:
        return
    _, dark, text, accent, soft = palette
    chart.font.color.rgb = RGBColor.from_string(text)
    colours = [accent, dark if dark != palette[0] else text, soft]
    plot = chart.plots[0]
    if data.chart_type == "pie":
        for point, colour in zip(
            plot.series[0].points, _cycle(colours, len(data.categories)), strict=True
        ):
            point.format.fill.solid()
            point.format.fill.fore_color.rgb = RGBColor.from_string(colour)
        return
    for series, colour in zip(plot.series, _cycle(colours, len(data.series)), strict=True):
        fill = series.format.line if data.chart_type == "line" else series.format.fill
        if data.chart_type == "line":
            fill.color.rgb = RGBColor.from_string(colour)
            fill.width = Pt(3)
        else:
            fill.solid()
            fill.fore_color.rgb = RGBColor.from_string(colour)


def _cycle(colours: list[str], count: int) -> list[str]:
    return [colours[i % len(colours)] for i in range(count)]


def _set_text(paragraph: BaseOxmlElement, text: str) -> None:
    """Put `text` in the paragraph's first run, keeping its formatting; drop the other runs."""
    runs = paragraph.findall(qn("a:r"))
    for extra in [*runs[1:], *paragraph.findall(qn("a:br")), *paragraph.findall(qn("a:fld"))]:
        paragraph.remove(extra)
    runs[0].find(qn("a:t")).text = text
