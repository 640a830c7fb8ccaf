"""The deck steps' schemas say every rule their checks hold, and code mends what strict mode drops.

A model answering the least instance of a step's schema
(tests/fakes/schema_instances.py) gives an answer the step's check takes as
it is; given the strict form OpenAI takes instead (no `prefixItems`, no
`maxLength`), the answer mended (mending.py) is taken too.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest

from app.agents.pptx.mending import mend_outline, mend_slides, mend_template
from app.agents.pptx.schema import (
    DeckSchema,
    Outline,
    OutlineSlide,
    SlideSchema,
    TemplateChoice,
    check_deck,
    check_outline,
)
from app.agents.pptx.step_schemas import (
    deck_schema,
    outline_schema,
    requirement_schema,
    template_schema,
)
from app.agents.pptx.templates import TemplateLibrary
from app.llm.json_schema import strict_schema
from tests.fakes.schema_instances import schema_instance
from tests.support.decks import deck, outline

LIBRARY = TemplateLibrary().templates
OCEAN = LIBRARY["ocean"]
TITLES = ["Solar power", "Agenda", "How it works", "Costs", "Thanks"]


def valid(schema: dict[str, Any], value: Any) -> bool:
    return bool(jsonschema_rs.validator_for(schema).is_valid(value))


def test_the_template_code_is_one_of_those_listed() -> None:
    schema = template_schema(sorted(LIBRARY))

    assert valid(schema, {"templateCode": "ocean", "reason": "calm"})
    assert not valid(schema, {"templateCode": "description", "reason": ""})
    assert [schema_instance(schema, pick)["templateCode"] for pick in range(3)] == sorted(LIBRARY)


def test_a_slide_count_the_message_states_is_the_only_one_the_requirement_may_give() -> None:
    stated = requirement_schema(7)
    free = requirement_schema(None)
    answer = {k: None for k in ("topic", "audience", "style", "language", "ask")}

    assert valid(stated, {**answer, "slideCount": 7})
    assert not valid(stated, {**answer, "slideCount": 8})
    assert valid(free, {**answer, "slideCount": None})
    assert not valid(free, {**answer, "slideCount": 2, "colour": "red"})


@pytest.mark.parametrize("code", sorted(LIBRARY))
@pytest.mark.parametrize("count", [3, 7, 12])
def test_any_instance_of_the_schemas_is_an_outline_and_a_deck_the_checks_take(
    code: str, count: int
) -> None:
    template = LIBRARY[code]
    for pick in range(4):
        planned = Outline.model_validate(schema_instance(outline_schema(template, count), pick))
        assert check_outline(planned, count, template) == []
        kinds = [s.page_type for s in planned.slides]
        written = DeckSchema.model_validate(schema_instance(deck_schema(template, kinds), pick))
        assert check_deck(written, planned, template) == []


@pytest.mark.parametrize("count", [3, 7, 12])
def test_an_instance_of_the_strict_forms_mended_is_taken_too(count: int) -> None:
    for pick in range(7):
        strict = strict_schema(outline_schema(OCEAN, count))
        assert strict is not None
        found = Outline.model_validate(schema_instance(strict, pick))
        planned, _ = mend_outline(found, count, OCEAN)
        assert check_outline(planned, count, OCEAN) == []
        kinds = [s.page_type for s in planned.slides]
        strict_deck = strict_schema(deck_schema(OCEAN, kinds))
        assert strict_deck is not None
        written = DeckSchema.model_validate(schema_instance(strict_deck, pick))
        slides, _ = mend_slides(written.slides, planned.slides, OCEAN)
        # What mending cannot put right (a slide of another page) is asked for alone.
        right = [
            (s, p)
            for s, p in zip(slides, planned.slides, strict=True)
            if s is not None and s.page_type == p.page_type
        ]
        mended = DeckSchema(slides=[s for s, _ in right])
        assert check_deck(mended, Outline(title="x", slides=[p for _, p in right]), OCEAN) == []


def test_an_outline_one_short_of_its_closing_slide_or_one_too_long_is_mended() -> None:
    five = Outline.model_validate(outline(TITLES))
    short = five.model_copy(update={"slides": five.slides[:-1]})
    long = five.model_copy(
        update={
            "slides": [
                *five.slides[:2],
                OutlineSlide(title="Extra", page_type="bullets"),
                *five.slides[2:],
            ]
        }
    )
    ends = five.model_copy(
        update={"slides": [s.model_copy(update={"page_type": "bullets"}) for s in five.slides]}
    )

    mended, notes = mend_outline(short, 5, OCEAN)
    assert [s.page_type for s in mended.slides][-1] == "closing"
    assert mended.slides[-1].title == "Solar power"
    assert notes == ["the outline had no closing slide: one titled as the deck was added."]
    mended, notes = mend_outline(long, 5, OCEAN)
    assert [s.title for s in mended.slides] == [
        "Solar power",
        "Agenda",
        "Extra",
        "How it works",
        "Thanks",
    ]
    assert notes == ["the outline had 6 slides; 1 dropped ('Costs') to make 5."]
    mended, notes = mend_outline(ends, 5, OCEAN)
    assert [s.page_type for s in mended.slides] == [
        "cover",
        "bullets",
        "bullets",
        "bullets",
        "closing",
    ]
    assert notes == [
        "slide 'Solar power' made the cover slide.",
        "slide 'Thanks' made the closing slide.",
    ]
    two_short = five.model_copy(update={"slides": five.slides[:3]})
    problems = check_outline(mend_outline(two_short, 5, OCEAN)[0], 5, OCEAN)
    assert "The outline must have exactly 5 slides." in problems


def test_a_slide_is_mended_from_its_outline_and_cut_to_its_budgets() -> None:
    planned = Outline.model_validate(outline(TITLES))
    written = DeckSchema.model_validate(deck(TITLES))
    written.slides[1] = SlideSchema.model_validate(
        {"pageType": "agenda", "fields": {"title": " ", "items": [], "colour": "red"}}
    )
    written.slides[2] = SlideSchema.model_validate(
        {
            "pageType": "cover",
            "fields": {
                "title": "How it works",
                "subtitle": "From light to current, in a few steps that are easy to follow"
                " for everyone in the room, and then some more words",
            },
        }
    )

    slides, notes = mend_slides(written.slides, planned.slides, OCEAN)

    assert slides[1] == SlideSchema.model_validate(
        {"pageType": "agenda", "fields": {"title": "Agenda", "items": ["Agenda"]}}
    )
    assert slides[2] is not None
    assert slides[2].page_type == "section"
    assert len(str(slides[2].fields["subtitle"])) <= 110
    assert notes == [
        "slide 2: dropped colour (the page has no such field).",
        "slide 2: title: empty; filled from the outline.",
        "slide 2: items: empty; filled from the outline's points.",
        "slide 3: made a 'section' page, as the outline plans it.",
        "slide 3: subtitle: 112 characters, cut to 110.",
    ]
    mended = DeckSchema(slides=[s for s in slides if s is not None])
    assert check_deck(mended, planned, OCEAN) == []


def test_a_template_named_by_its_name_is_that_template() -> None:
    choice, notes = mend_template(TemplateChoice(template_code="Ocean"), LIBRARY)
    assert (choice.template_code, notes) == ("ocean", ["the template 'Ocean' is 'ocean'."])
    unknown = TemplateChoice(template_code="description")
    assert mend_template(unknown, LIBRARY) == (unknown, [])
