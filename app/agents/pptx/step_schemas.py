"""The JSON Schema each step of a deck build sends, built for the request at hand.

Every rule a step's check holds the answer to is said here too, where JSON
Schema can say it, so a server holding the model to the schema holds it to
the rules: the template codes there are (an `enum`), the page types the
chosen template has, exactly the slides asked for (`minItems` = `maxItems`),
the cover first and the closing slide last (`prefixItems`, one schema per
place), each slide's own fields, none missing and none more, and each text's
budget (`maxLength`). A provider whose strict mode cannot say some of it gets
the nearest form it takes (`app/llm/json_schema.py`), and the step's mending
and check hold the answer to the rest (mending.py, schema.py).

The shapes are those of schema.py's pydantic models, which read the answer
either way; only the rules are the request's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from app.agents.pptx.schema import ChartData
from app.agents.pptx.templates import FieldSpec, PageSpec, TemplateSpec
from app.llm.json_schema import closed_object as closed
from app.llm.json_schema import text

Schema = dict[str, Any]
MIN_SLIDES = 3
MAX_SLIDES = 30
"""What a requirement may ask for at all (`Requirement.slide_count`); the setting's own
limit is asked about by the step, not refused by the schema."""
CHART_TYPES = list(get_args(ChartData.model_fields["chart_type"].annotation))


def _nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def _list(item: Schema, least: int, most: int | None = None) -> Schema:
    schema: Schema = {"type": "array", "items": item, "minItems": least}
    if most is not None:
        schema["maxItems"] = max(most, least)
    return schema


def requirement_schema(stated_slides: int | None) -> Schema:
    """Each detail, or null when the user has not said it; the slide count the user's
    message states (`builds.stated_slide_count`) is the only one the answer may give."""
    slides: Schema = (
        {"type": "integer", "enum": [stated_slides]}
        if stated_slides is not None
        else _nullable({"type": "integer", "minimum": MIN_SLIDES, "maximum": MAX_SLIDES})
    )
    return closed(
        {
            "topic": _nullable(text()),
            "audience": _nullable(text()),
            "slideCount": slides,
            "style": _nullable(text()),
            "language": _nullable(text()),
            "ask": _nullable(text()),
        }
    )


def template_schema(codes: Sequence[str]) -> Schema:
    code = {"type": "string", "enum": list(codes)}
    return closed({"templateCode": code, "reason": {"type": "string"}})


def outline_schema(template: TemplateSpec, count: int) -> Schema:
    """Exactly `count` slides of the template's page types: the cover first, the closing
    slide last, any other page between."""
    kinds: list[str] = [p.page_type for p in template.pages]
    middle = [k for k in kinds if k not in ("cover", "closing")] or kinds
    first = ["cover"] if "cover" in kinds else middle
    last = ["closing"] if "closing" in kinds else middle
    places = [first, *[middle] * max(count - 2, 0), last][:count]
    titles = [f.budget for p in template.pages for f in p.fields if f.name == "title"]
    title = max(titles, default=None)

    def slide(page_types: list[str]) -> Schema:
        return closed(
            {
                "title": text(title),
                "pageType": {"type": "string", "enum": page_types},
                "points": _list(text(), 0),
            }
        )

    slides: Schema = {
        "type": "array",
        "minItems": count,
        "maxItems": count,
        "prefixItems": [slide(place) for place in places],
    }
    return closed({"title": text(), "slides": slides})


def deck_schema(template: TemplateSpec, page_types: Sequence[str]) -> Schema:
    """The slides of an outline: one per planned slide, each with its own page's fields."""
    pages = [template.page(p) for p in page_types]
    slides: Schema = {
        "type": "array",
        "minItems": len(pages),
        "maxItems": len(pages),
        "prefixItems": [slide_schema(page) for page in pages if page is not None],
    }
    return closed({"slides": slides})


def free_deck_schema(template: TemplateSpec, max_slides: int) -> Schema:
    """Any number of slides, each of any page the template has (a change to a deck)."""
    return closed({"slides": _list(any_slide_schema(template), 1, max_slides)})


def any_slide_schema(template: TemplateSpec) -> Schema:
    options = [slide_schema(page) for page in template.pages]
    return options[0] if len(options) == 1 else {"anyOf": options}


def slide_schema(page: PageSpec) -> Schema:
    """A slide of this page: its type, and each of its fields filled within its budget."""
    return closed(
        {
            "pageType": {"type": "string", "enum": [page.page_type]},
            "fields": closed({f.name: field_schema(f) for f in page.fields}),
        }
    )


def field_schema(spec: FieldSpec) -> Schema:
    cell = text(spec.budget)
    if spec.kind == "text":
        return cell
    if spec.kind == "bullets":
        return _list(cell, 1, spec.max_items)
    if spec.kind == "table":
        return closed(
            {
                "header": _list(cell, 1, spec.max_columns),
                "rows": _list(_list(cell, 1, spec.max_columns), 1, spec.max_items - 1),
            }
        )
    values = _list({"type": "number"}, 1, spec.max_items)
    return closed(
        {
            "chartType": {"type": "string", "enum": CHART_TYPES},
            "categories": _list(cell, 1, spec.max_items),
            "series": _list(closed({"name": cell, "values": values}), 1, spec.max_columns),
        }
    )
