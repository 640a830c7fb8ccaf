"""The deck templates shipped with the package, and what the model may put in them.

A template is two files in `templates/`: `<code>.pptx`, one slide per page
type (and a text version of a picture page, drawn when no picture is), and
`<code>.json`, its `TemplateSpec`. Both are written by
`scripts/design_templates.py`, so they are rebuilt from code, never
edited by hand. Every fillable shape on a template slide has a name (the
field's name) and a budget in the spec; the renderer copies a page's slide
and fills those shapes, and the schema check holds the model to the budgets.
A user's own template (an uploaded .pptx) gets a `TemplateSpec` of the same
shape from its layouts (layouts.py).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, Field

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

PageType = Literal[
    "cover",
    "agenda",
    "section",
    "bullets",
    "comparison",
    "image_text",
    "table",
    "chart",
    "closing",
]
PAGE_TYPES: tuple[PageType, ...] = get_args(PageType)
"""The page types in the order a template's slides hold them."""
FieldKind = Literal["text", "bullets", "table", "chart"]


class FieldSpec(BaseModel):
    """One named shape the model fills."""

    name: str
    kind: FieldKind
    budget: int = Field(gt=0)
    """Most characters of the text, of each bullet, of each table cell or chart label."""
    max_items: int = 1
    """Most bullets, most table rows (the header included), or most chart categories."""
    max_columns: int = 1
    """Most table columns, or most chart series."""


class PageSpec(BaseModel):
    page_type: PageType
    index: int
    """The template slide (0-based) this page type is copied from."""
    purpose: str
    """What the page is for, as the model reads it when it plans the outline."""
    fields: list[FieldSpec]
    picture: str | None = None
    """A decorative shape a generated picture may cover (cropped to its box), when images are on."""
    text_index: int | None = None
    """The template slide copied instead of `index` when no picture is drawn for the slide
    (a page with a `picture`): a text layout, not an empty frame."""


class TemplateSpec(BaseModel):
    code: str
    name: str
    description: str
    style_tags: list[str]
    fonts: list[str]
    palette: list[str]
    """Hex colours, background first."""
    pages: list[PageSpec]

    def page(self, page_type: str) -> PageSpec | None:
        return next((p for p in self.pages if p.page_type == page_type), None)

    def summary(self) -> str:
        """One line for the model's template choice."""
        return f"{self.code}: {self.name}, {self.description} (style: {', '.join(self.style_tags)})"


class TemplateLibrary:
    """The templates found in a folder, by code."""

    def __init__(self, folder: Path = TEMPLATES_DIR) -> None:
        self.folder = folder

    @cached_property
    def templates(self) -> dict[str, TemplateSpec]:
        specs = (
            TemplateSpec.model_validate_json(path.read_text(encoding="utf-8"))
            for path in sorted(self.folder.glob("*.json"))
        )
        return {spec.code: spec for spec in specs}

    def get(self, code: str) -> TemplateSpec | None:
        return self.templates.get(code)

    def path(self, code: str) -> Path:
        return self.folder / f"{code}.pptx"
