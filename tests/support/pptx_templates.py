"""A company's own deck template, made the way a user would bring one: its own layouts and theme.

python-pptx's default presentation, renamed and recoloured: every layout's
name starts with "Acme", the theme is "Acme Theme" with its own accent, and
the master carries a logo shape, so a deck built on it shows where its
master, layouts and theme came from.
"""

from __future__ import annotations

import io

from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.enum.shapes import MSO_SHAPE
from pptx.opc.constants import RELATIONSHIP_TYPE as RT
from pptx.util import Inches

THEME_NAME = "Acme Theme"
LOGO = "Acme logo"


def company_template(*, drop: tuple[str, ...] = ()) -> bytes:
    """The template's bytes; `drop` names layouts (python-pptx's default names) to leave out."""
    deck = Presentation()
    master = deck.slide_master
    for layout in list(master.slide_layouts):
        if layout.name in drop:
            master.slide_layouts.remove(layout)
            continue
        layout._element.cSld.set("name", f"Acme {layout.name}")
    # A master has no `add_shape`: the logo is drawn on a scratch slide and moved over.
    scratch = deck.slides.add_slide(master.slide_layouts[0])
    logo = scratch.shapes.add_shape(
        MSO_SHAPE.OVAL, Inches(9.1), Inches(0.15), Inches(0.6), Inches(0.6)
    )
    logo.name = LOGO
    logo.fill.solid()
    logo.fill.fore_color.rgb = RGBColor(0xC0, 0x39, 0x2B)
    master.shapes._spTree.append(logo._element)
    deck.part.drop_rel(deck.slides._sldIdLst[0].rId)
    deck.slides._sldIdLst.remove(deck.slides._sldIdLst[0])
    theme = master.part.part_related_by(RT.THEME)
    xml = theme.blob.decode("utf-8")
    xml = xml.replace('name="Office Theme"', f'name="{THEME_NAME}"', 1)
    theme._blob = xml.replace('<a:srgbClr val="4F81BD"/>', '<a:srgbClr val="C0392B"/>').encode()
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()
