"""How the PowerPoint agent reads a model's JSON and holds a deck to its template's budgets."""

from __future__ import annotations

import pytest

from app.agents.pptx.mending import mend_slides
from app.agents.pptx.schema import (
    DeckSchema,
    Outline,
    Requirement,
    check_deck,
    shorten,
)
from app.agents.pptx.templates import TemplateLibrary
from app.llm.structured import InvalidAnswer, parse_json, read_answer
from tests.support.decks import deck, outline

TEMPLATE = TemplateLibrary().templates["ocean"]
TITLES = ["Solar power", "Agenda", "How it works", "Thanks"]


def test_json_in_a_fence_with_raw_tabs_and_stray_backslashes_is_read() -> None:
    answer = 'Here it is:\n```json\n{"topic": "C:\\Users\tpaths", "slideCount": 5}\n```'

    assert parse_json(answer) == {"topic": "C:\\Users\tpaths", "slideCount": 5}


def test_an_answer_without_an_object_or_of_the_wrong_shape_says_what_is_wrong() -> None:
    with pytest.raises(InvalidAnswer, match="one JSON object"):
        parse_json("I cannot do that.")
    with pytest.raises(InvalidAnswer, match="slideCount"):
        read_answer('{"slideCount": 500}', Requirement)


def test_a_requirement_names_what_is_missing_and_merges_later_answers() -> None:
    first = Requirement(topic="solar power", style="friendly")
    later = Requirement(audience="students", slide_count=8)

    assert first.missing() == ["audience", "number of slides"]
    assert first.merged(later).missing() == []


def test_a_deck_is_checked_field_by_field_against_its_template() -> None:
    good = DeckSchema.model_validate(deck(TITLES))
    plan = Outline.model_validate(outline(TITLES))
    bad = good.model_copy(deep=True)
    bad.slides[1].fields.pop("items")
    bad.slides[2].fields["title"] = "word " * 30
    bad.slides[3].fields["colour"] = "red"

    assert check_deck(good, plan, TEMPLATE) == []
    problems = check_deck(bad, plan, TEMPLATE)
    assert problems == [
        "Slide 2, field 'items': give a list of 1 to 6 non-empty points.",
        "Slide 3, field 'title': 150 characters, at most 50.",
        "Slide 4: the page has no field colour.",
    ]


def test_text_over_budget_is_shortened_at_a_word_never_mid_word() -> None:
    assert shorten("Solar panels turn sunlight into electricity", 20) == "Solar panels turn…"
    assert shorten("Short", 20) == "Short"
    original = "A very long title about solar power " * 4
    long_deck = DeckSchema.model_validate(deck(TITLES))
    long_deck.slides[0].fields["title"] = original

    plan = Outline.model_validate(outline(TITLES))
    slides, notes = mend_slides(long_deck.slides, plan.slides, TEMPLATE)
    fitted = DeckSchema(slides=[s for s in slides if s is not None])

    assert check_deck(fitted, plan, TEMPLATE) == []
    assert notes == ["slide 1: title: 143 characters, cut to 60."]
    kept = fitted.slides[0].title.removesuffix("…")
    assert original.startswith(kept)
    assert original[len(kept)] == " "
