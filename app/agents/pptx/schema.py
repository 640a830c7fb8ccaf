"""What the model writes at each step, validated before anything is stored or drawn.

The model answers in JSON, read and checked against these shapes by
`app/llm/structured.py` (the request's own JSON Schema, which says the same
rules where it can, is step_schemas.py). What code can repair is repaired
first (mending.py); `check_deck` then holds a deck to its template and
outline: every slide of its planned page, every field the page has filled,
none the page lacks given, and each text within its shape's budget. Problems
come back as sentences the model can act on when it is asked again.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from app.agents.pptx.templates import FieldSpec, PageType, TemplateSpec


class Wire(BaseModel):
    """camelCase in the model's JSON (as the original's schema was), snake_case here."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Requirement(Wire):
    topic: str | None = None
    audience: str | None = None
    slide_count: int | None = Field(default=None, ge=3, le=30)
    style: str | None = None
    language: str | None = None
    """The language the deck is written in, the user's unless they asked for another."""

    def missing(self) -> list[str]:
        wanted = {
            "topic": self.topic,
            "audience": self.audience,
            "number of slides": self.slide_count,
            "style": self.style,
        }
        return [name for name, value in wanted.items() if not value]

    def merged(self, newer: Requirement) -> Requirement:
        """These answers, with what `newer` says filled in or changed."""
        return self.model_copy(update=newer.model_dump(exclude_none=True))


class TemplateChoice(Wire):
    template_code: str
    reason: str = ""


class OutlineSlide(Wire):
    title: str = Field(min_length=1)
    page_type: PageType
    points: list[str] = Field(default_factory=list)


class Outline(Wire):
    title: str = Field(min_length=1)
    slides: list[OutlineSlide] = Field(min_length=1)


class TableData(Wire):
    header: list[str] = Field(min_length=1)
    rows: list[list[str]] = Field(min_length=1)


class ChartSeries(Wire):
    name: str = Field(min_length=1)
    values: list[float] = Field(min_length=1)


class ChartData(Wire):
    """A native chart: one value per category in each series."""

    chart_type: Literal["bar", "line", "pie"] = "bar"
    categories: list[str] = Field(min_length=1)
    series: list[ChartSeries] = Field(min_length=1)


FieldValue = str | list[str] | TableData | ChartData


class SlideSchema(Wire):
    page_type: PageType
    fields: dict[str, FieldValue]

    @property
    def title(self) -> str:
        value = self.fields.get("title")
        return value if isinstance(value, str) else ""


class DeckSchema(Wire):
    slides: list[SlideSchema] = Field(min_length=1)


class Intent(Wire):
    intent: Literal["create", "modify", "resume"]


def check_outline(outline: Outline, slide_count: int, template: TemplateSpec) -> list[str]:
    problems = []
    if len(outline.slides) != slide_count:
        problems.append(f"The outline must have exactly {slide_count} slides.")
    if outline.slides[0].page_type != "cover":
        problems.append("The first slide must be the cover.")
    if outline.slides[-1].page_type != "closing":
        problems.append("The last slide must be the closing slide.")
    for number, slide in enumerate(outline.slides, 1):
        if template.page(slide.page_type) is None:
            problems.append(f"Slide {number}: the template has no {slide.page_type!r} page.")
        elif 1 < number < len(outline.slides) and slide.page_type in ("cover", "closing"):
            problems.append(f"Slide {number}: only the first slide is the cover, and only the"
                            " last the closing slide.")  # fmt: skip
    return problems


def check_deck(deck: DeckSchema, outline: Outline, template: TemplateSpec) -> list[str]:
    """Everything wrong with `deck` for this template and outline; empty when it can be drawn."""
    problems = []
    if len(deck.slides) != len(outline.slides):
        problems.append(f"The deck must have exactly {len(outline.slides)} slides.")
    for number, (slide, planned) in enumerate(zip(deck.slides, outline.slides, strict=False), 1):
        problems.extend(check_slide(number, slide, template, planned.page_type))
    return problems


def check_slide(
    number: int, slide: SlideSchema, template: TemplateSpec, planned: str | None = None
) -> list[str]:
    """Everything wrong with one slide: its page (`planned`, the outline's, when given),
    every field of the page filled within its budget, and no other field."""
    page = template.page(slide.page_type)
    if planned is not None and slide.page_type != planned:
        return [f"Slide {number}: it must be a {planned!r} page, as the outline plans it."]
    if page is None:
        return [f"Slide {number}: the template has no {slide.page_type!r} page."]
    problems = []
    for spec in page.fields:
        value = slide.fields.get(spec.name)
        where = f"Slide {number}, field {spec.name!r}"
        if spec.kind == "text":
            if not isinstance(value, str) or not value.strip():
                problems.append(f"{where}: write a non-empty text.")
            elif len(value) > spec.budget:
                problems.append(f"{where}: {len(value)} characters, at most {spec.budget}.")
        elif spec.kind == "bullets":
            problems.extend(_check_items(where, value, spec.max_items, spec.budget))
        elif spec.kind == "chart":
            problems.extend(_check_chart(where, value, spec))
        elif not isinstance(value, TableData):
            problems.append(f"{where}: give a table as {{header, rows}}.")
        else:
            problems.extend(_check_table(where, value, spec.max_items, spec.max_columns))
            problems.extend(
                f"{where}: the cell {cell!r} is over {spec.budget} characters."
                for cell in [*value.header, *(c for row in value.rows for c in row)]
                if len(cell) > spec.budget
            )
    extra = set(slide.fields) - {f.name for f in page.fields}
    if extra:
        problems.append(f"Slide {number}: the page has no field {', '.join(sorted(extra))}.")
    return problems


def _check_items(where: str, value: FieldValue | None, max_items: int, budget: int) -> list[str]:
    if not isinstance(value, list) or not value or not all(v.strip() for v in value):
        return [f"{where}: give a list of 1 to {max_items} non-empty points."]
    problems = []
    if len(value) > max_items:
        problems.append(f"{where}: {len(value)} points, at most {max_items}.")
    problems.extend(
        f"{where}: the point {item!r} is over {budget} characters."
        for item in value
        if len(item) > budget
    )
    return problems


def _check_table(where: str, table: TableData, max_rows: int, max_columns: int) -> list[str]:
    problems = []
    if len(table.rows) + 1 > max_rows:
        problems.append(f"{where}: at most {max_rows - 1} rows under the header.")
    if len(table.header) > max_columns:
        problems.append(f"{where}: at most {max_columns} columns.")
    if any(len(row) != len(table.header) for row in table.rows):
        problems.append(f"{where}: every row needs one cell per header column.")
    if any(not cell.strip() for cell in [*table.header, *(c for r in table.rows for c in r)]):
        problems.append(f"{where}: no cell may be empty.")
    return problems


def _check_chart(where: str, value: FieldValue | None, spec: FieldSpec) -> list[str]:
    if not isinstance(value, ChartData):
        return [
            f"{where}: give a chart as {{chartType: bar|line|pie, categories: [...],"
            " series: [{name, values: [numbers]}]}."
        ]
    problems = []
    if len(value.categories) > spec.max_items:
        problems.append(f"{where}: at most {spec.max_items} categories.")
    if len(value.series) > spec.max_columns:
        problems.append(f"{where}: at most {spec.max_columns} series.")
    if value.chart_type == "pie" and len(value.series) != 1:
        problems.append(f"{where}: a pie chart has exactly one series.")
    if any(len(s.values) != len(value.categories) for s in value.series):
        problems.append(f"{where}: every series needs one value per category.")
    problems.extend(
        f"{where}: the label {label!r} is over {spec.budget} characters."
        for label in [*value.categories, *(s.name for s in value.series)]
        if len(label) > spec.budget
    )
    return problems


def shorten(text: str, budget: int) -> str:
    """`text` cut at the last word boundary that fits `budget` with an ellipsis, never mid-word."""
    if len(text) <= budget:
        return text
    cut = text[: budget - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip(" ,;:.-") + "…"
