"""Draws a validated deck on a user's own template: its masters, layouts and theme.

Blocking code, run in a worker thread, like render.py. The file was read
whole by the isolated reader when it was uploaded and again when its layouts
were matched (within the same inflation, memory and time limits), so opening
it here costs no more than that. Its own slides are dropped; each slide of
the deck is a new slide on the layout `LayoutPlan` gives its page type, its
fields put in that layout's placeholders (a table or a chart in its body
placeholder's box). Placeholders left unfilled are removed, so no "Click to
add text" remains; the master's own shapes (logo, footer art) come with
the layout.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from pptx import Presentation
from pptx.slide import Slide
from pptx.util import Emu

from app.agents.pptx.layouts import LayoutPage, LayoutPlan
from app.agents.pptx.render import RenderError, RenderTimeout, add_chart, fill_table
from app.agents.pptx.schema import ChartData, DeckSchema, TableData


def render_on_layouts(
    template: bytes,
    plan: LayoutPlan,
    deck: DeckSchema,
    expired: Callable[[], bool],
    pictures: dict[int, bytes] | None = None,
) -> bytes:
    """The .pptx bytes; `pictures` by slide index go in their layout's picture placeholder."""
    try:
        prs = Presentation(io.BytesIO(template))
    except Exception as exc:  # python-pptx raises many kinds on a broken package
        raise RenderError(f"the template does not open: {type(exc).__name__}") from exc
    slide_ids = prs.slides._sldIdLst
    for slide_id in list(slide_ids):
        prs.part.drop_rel(slide_id.rId)
        slide_ids.remove(slide_id)
    for index, schema in enumerate(deck.slides):
        if expired():
            raise RenderTimeout
        page = plan.pages.get(schema.page_type)
        if page is None:
            raise RenderError(f"the template has no layout for {schema.page_type} slides")
        picture = (pictures or {}).get(index)
        if "picture" in page.slots and picture is None:
            page = plan.text_fallback
        layout = prs.slide_masters[page.master].slide_layouts[page.layout]
        slide = prs.slides.add_slide(layout)
        _fill(slide, page, schema.fields, picture)
    out = io.BytesIO()
    prs.save(out)
    return out.getvalue()


def _fill(slide: Slide, page: LayoutPage, fields: dict[str, Any], picture: bytes | None) -> None:
    # By place, as the layout's were numbered (readers.layouts): the same order.
    placeholders = dict(enumerate(slide.placeholders))
    used = set()
    for name, value in fields.items():
        idx = page.slots.get(name)
        if idx is None or idx not in placeholders:
            continue
        used.add(idx)
        shape = placeholders[idx]
        box = page.boxes.get(name)
        if box is not None:
            shape.left, shape.top, shape.width, shape.height = (Emu(v) for v in box)
        if isinstance(value, TableData):
            frame = slide.shapes.add_table(
                len(value.rows) + 1, len(value.header),
                shape.left, shape.top, shape.width, shape.height,
            )  # fmt: skip
            frame.name = "table"
            fill_table(frame.table, value)
            used.discard(idx)
        elif isinstance(value, ChartData):
            add_chart(slide, shape, value, [])
            used.discard(idx)
        else:
            shape.name = name
            frame = shape.text_frame
            lines = [value] if isinstance(value, str) else value
            frame.text = lines[0]
            for line in lines[1:]:
                frame.add_paragraph().text = line
    picture_idx = page.slots.get("picture")
    if picture is not None and picture_idx is not None:
        used.add(picture_idx)
    for idx, shape in placeholders.items():
        if idx not in used:
            shape._element.getparent().remove(shape._element)
    if picture is not None and picture_idx in placeholders:
        frame = placeholders[picture_idx]
        box = page.boxes.get("picture")
        if box is not None:
            frame.left, frame.top, frame.width, frame.height = (Emu(v) for v in box)
        frame.insert_picture(io.BytesIO(picture)).name = "picture"
