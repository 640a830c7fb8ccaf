"""What code mends in a deck step's answer before anything goes back to the model.

A rule the schema could not hold the model to (a provider's strict mode
without `prefixItems` or `maxLength`, a model asked in the prompt alone) is
often broken in a way that needs no model to put right: a first slide that
is not the cover, an outline one slide long or one short of its closing
slide, a text a few characters over its budget, an empty field the outline
already holds, a table row one cell short. Each function here returns the
answer mended and a note of each repair, which the turn's thinking shows;
what it cannot mend is left for the check (schema.py), and only that goes
back to the model, for the failing part alone (deck steps: one slide).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TypeVar

from app.agents.pptx.schema import (
    ChartData,
    ChartSeries,
    FieldValue,
    Outline,
    OutlineSlide,
    Requirement,
    SlideSchema,
    TableData,
    TemplateChoice,
    shorten,
)
from app.agents.pptx.templates import FieldSpec, TemplateSpec

R = TypeVar("R", bound=Requirement)
FILLER = "—"
"""What an empty table cell gets."""
CONTENT_PAGE = "bullets"
"""The page a slide of a kind the template lacks becomes (every template has one)."""
SECTION_PAGE = "section"
"""The page a cover or closing slide between the first and the last becomes."""
ENDS = ("cover", "closing")


def mend_requirement(answer: R, stated: int | None) -> tuple[R, list[str]]:
    """The slide count the user's message states wins over the one the model read."""
    if stated is None or answer.slide_count == stated:
        return answer, []
    read = "none" if answer.slide_count is None else str(answer.slide_count)
    note = f"{stated} slides, as the message says (the model read {read})."
    return answer.model_copy(update={"slide_count": stated}), [note]


def mend_template(
    choice: TemplateChoice, library: Mapping[str, TemplateSpec]
) -> tuple[TemplateChoice, list[str]]:
    """A template named by its name, or its code in other letter case, is that template."""
    if choice.template_code in library:
        return choice, []
    wanted = choice.template_code.strip().casefold()
    for code, spec in library.items():
        if wanted in (code.casefold(), spec.name.casefold()):
            note = f"the template {choice.template_code!r} is {code!r}."
            return choice.model_copy(update={"template_code": code}), [note]
    return choice, []


def mend_outline(outline: Outline, count: int, template: TemplateSpec) -> tuple[Outline, list[str]]:
    """The outline with `count` slides, the cover first and the closing slide last, on the
    template's pages, where that takes no new content: surplus middle slides dropped, a
    missing cover or closing slide added (titled as the deck), the ends retyped, and so
    are a cover or closing page between them and a page the template lacks."""
    slides, notes = list(outline.slides), []
    if len(slides) > count >= 2:
        dropped = slides[count - 1 : -1]
        slides = [*slides[: count - 1], slides[-1]]
        notes.append(
            f"the outline had {len(outline.slides)} slides; {len(dropped)} dropped"
            f" ({', '.join(repr(s.title) for s in dropped)}) to make {count}."
        )
    kinds = {p.page_type for p in template.pages}
    if len(slides) == count - 1 and "cover" in kinds and slides[0].page_type != "cover":
        slides.insert(0, OutlineSlide(title=outline.title, page_type="cover"))
        notes.append("the outline had no cover: one titled as the deck was added.")
    if len(slides) == count - 1 and "closing" in kinds and slides[-1].page_type != "closing":
        slides.append(OutlineSlide(title=outline.title, page_type="closing"))
        notes.append("the outline had no closing slide: one titled as the deck was added.")
    if len(slides) == count:
        for place, kind in ((0, "cover"), (-1, "closing")):
            if kind in kinds and slides[place].page_type != kind:
                notes.append(f"slide {slides[place].title!r} made the {kind} slide.")
                slides[place] = slides[place].model_copy(update={"page_type": kind})
    between = SECTION_PAGE if SECTION_PAGE in kinds else CONTENT_PAGE
    for number, slide in enumerate(slides, 1):
        if 1 < number < len(slides) and slide.page_type in ENDS and between in kinds:
            notes.append(f"slide {number}: a {slide.page_type} page between the first and the"
                         f" last slide; it is a {between!r} page.")  # fmt: skip
            slides[number - 1] = slide.model_copy(update={"page_type": between})
        elif slide.page_type not in kinds and CONTENT_PAGE in kinds:
            notes.append(f"slide {number}: the template has no {slide.page_type!r} page;"
                         f" it is a {CONTENT_PAGE!r} page.")  # fmt: skip
            slides[number - 1] = slide.model_copy(update={"page_type": CONTENT_PAGE})
    return outline.model_copy(update={"slides": slides}), notes


def mend_slides(
    slides: list[SlideSchema], planned: Sequence[OutlineSlide | None], template: TemplateSpec
) -> tuple[list[SlideSchema | None], list[str]]:
    """One slide (None: missing) per planned slide, each mended (`planned` None: on its own
    page, with nothing to fill it from); slides beyond the plan dropped."""
    wanted, notes = len(planned), []
    given: list[SlideSchema | None] = list(slides)
    if len(given) > wanted:
        notes.append(f"the deck had {len(slides)} slides; the ones after {wanted} dropped.")
        given = given[:wanted]
    given += [None] * (wanted - len(given))
    mended: list[SlideSchema | None] = []
    for number, (slide, plan) in enumerate(zip(given, planned, strict=True), 1):
        if slide is None:
            mended.append(None)
            continue
        slide, repairs = mend_slide(slide, template, plan)
        mended.append(slide)
        notes.extend(f"slide {number}: {repair}" for repair in repairs)
    return mended, notes


def mend_slide(
    slide: SlideSchema, template: TemplateSpec, planned: OutlineSlide | None = None
) -> tuple[SlideSchema, list[str]]:
    """The slide on its planned page when its fields fit that page, with no field the page
    lacks, every empty field the outline holds filled from it, and every text, list, table
    and chart cut to its budget."""
    notes = []
    if planned is not None and slide.page_type != planned.page_type:
        page = template.page(planned.page_type)
        if page is None or not set(slide.fields) <= {f.name for f in page.fields}:
            return slide, []
        notes.append(f"made a {planned.page_type!r} page, as the outline plans it.")
        slide = slide.model_copy(update={"page_type": planned.page_type})
    page = template.page(slide.page_type)
    if page is None:
        return slide, notes
    fields: dict[str, FieldValue] = {}
    extra = sorted(set(slide.fields) - {f.name for f in page.fields})
    if extra:
        notes.append(f"dropped {', '.join(extra)} (the page has no such field).")
    points = _outline_points(planned)
    for spec in page.fields:
        value, repairs = _mend_field(spec, slide.fields.get(spec.name), planned, points)
        notes.extend(f"{spec.name}: {repair}" for repair in repairs)
        if value is not None:
            fields[spec.name] = value
    return slide.model_copy(update={"fields": fields}), notes


def _outline_points(planned: OutlineSlide | None) -> Iterator[str]:
    """The outline's points for the slide, each given to one empty field at most."""
    return iter([p.strip() for p in planned.points if p.strip()] if planned else [])


def _mend_field(
    spec: FieldSpec, value: FieldValue | None, planned: OutlineSlide | None, points: Iterator[str]
) -> tuple[FieldValue | None, list[str]]:
    budget = spec.budget
    if spec.kind == "text":
        if isinstance(value, str) and value.strip():
            return _shortened(value.strip(), budget)
        source = planned.title if spec.name == "title" and planned else next(points, "")
        if not source.strip():
            return value, []
        return shorten(source.strip(), budget), ["empty; filled from the outline."]
    if spec.kind == "bullets":
        return _mend_bullets(value, spec, points)
    if isinstance(value, TableData) and spec.kind == "table":
        fitted: FieldValue = _mend_table(value, spec)
    elif isinstance(value, ChartData) and spec.kind == "chart":
        fitted = _mend_chart(value, spec)
    else:
        return value, []
    return fitted, [] if fitted == value else ["fitted to its rows, columns and budget."]


def _shortened(text: str, budget: int) -> tuple[str, list[str]]:
    if len(text) <= budget:
        return text, []
    return shorten(text, budget), [f"{len(text)} characters, cut to {budget}."]


def _mend_bullets(
    value: FieldValue | None, spec: FieldSpec, points: Iterator[str]
) -> tuple[FieldValue | None, list[str]]:
    items = [v.strip() for v in value if v.strip()] if isinstance(value, list) else []
    notes = []
    if not items:
        items = list(points)
        if not items:
            return value, []
        notes.append("empty; filled from the outline's points.")
    if len(items) > spec.max_items:
        notes.append(f"{len(items)} points, the first {spec.max_items} kept.")
        items = items[: spec.max_items]
    if any(len(item) > spec.budget for item in items):
        notes.append(f"points over {spec.budget} characters cut.")
    return [shorten(item, spec.budget) for item in items], notes


def _mend_table(table: TableData, spec: FieldSpec) -> TableData:
    """At most its rows and columns, one cell per header column, no cell empty or too long."""
    header = [_cell(c, spec.budget) for c in table.header[: spec.max_columns]]
    rows = [
        [_cell(c, spec.budget) for c in [*row, *[FILLER] * len(header)][: len(header)]]
        for row in table.rows[: max(spec.max_items - 1, 1)]
    ]
    return TableData(header=header, rows=rows)


def _cell(text: str, budget: int) -> str:
    return shorten(text.strip(), budget) if text.strip() else FILLER


def _mend_chart(chart: ChartData, spec: FieldSpec) -> ChartData:
    """At most its categories and series (one for a pie), one value per category, labels cut."""
    categories = [_cell(c, spec.budget) for c in chart.categories[: spec.max_items]]
    series = chart.series[: 1 if chart.chart_type == "pie" else spec.max_columns]
    return ChartData(
        chart_type=chart.chart_type,
        categories=categories,
        series=[
            ChartSeries(
                name=_cell(s.name, spec.budget),
                values=[*s.values, *[0.0] * len(categories)][: len(categories)],
            )
            for s in series
        ],
    )
