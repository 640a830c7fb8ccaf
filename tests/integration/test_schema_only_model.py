"""The agents against a model that holds to the schema it is sent, and to nothing else.

Such a model (`SchemaOnly`, tests/fakes/model_behaviours.py) answers every
JSON step with the least instance of the step's schema, whatever the prompt
asked: a rule the step checks but its schema leaves out fails. Here the
steps' own schemas carry the rules, the OpenAI-compatible fake gets their
strict form (no `prefixItems`, no `maxLength`, as OpenAI's strict mode
takes them), and code mends the rest: a deck on each shipped template and
on an uploaded one comes with the slides asked for, the cover first and the
closing slide last, every field filled; deep research reaches its report;
three follow-up questions come.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.pptx.schema import DeckSchema, FieldValue, TableData
from app.agents.pptx.templates import TemplateLibrary, TemplateSpec
from app.agents.recommend import PROMPT as FOLLOW_UPS
from tests.fakes.model_behaviours import SchemaOnly
from tests.fakes.scripted_server import Body, ScriptedServer
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import app_on, ask
from tests.support.decks import DeckModel, stored_builds
from tests.support.pptx_templates import company_template
from tests.support.research import REPORT, over_http
from tests.support.sse import Event, text_of

PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
SLIDES = 7
REQUEST = f"A deck of {SLIDES} slides on solar power for students"
SHIPPED = TemplateLibrary().templates
CODES = sorted(SHIPPED)
"""The template step's `enum`, in order: `SchemaOnly(pick=n)` chooses the n-th."""


def deck_answers(server: ScriptedServer, body: Body) -> str:
    """What the deck's steps would answer; a schema-only model answers its schema instead."""
    answer = DeckModel(["-"] * SLIDES).answer(server.system_text(body))
    assert isinstance(answer, str)
    return answer


def assert_whole_deck(events: list[Event], fields: dict[str, list[str]], stored: str) -> None:
    """Built, `SLIDES` slides, the cover first and the closing slide last, and every slide
    as stored (the deck was drawn from it) with every field of its page (`fields`) filled."""
    assert events[-1]["status"] == "completed", events[-3:]
    [ready] = [e for e in events if e["type"] == "deck" and e["stage"] == "ready"]
    kinds = [s["pageType"] for s in ready["slides"]]
    assert (len(kinds), kinds[0], kinds[-1]) == (SLIDES, "cover", "closing")
    deck = DeckSchema.model_validate_json(stored)
    assert [s.page_type for s in deck.slides] == kinds
    for slide in deck.slides:
        assert sorted(slide.fields) == sorted(fields[slide.page_type])
        assert all(filled(value) for value in slide.fields.values()), slide
    assert [e["name"] for e in events if e["type"] == "file"] == [f"{ready['title']} v1.pptx"]


def filled(value: FieldValue) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list):
        return bool(value) and all(item.strip() for item in value)
    if isinstance(value, TableData):
        return all(cell.strip() for cell in [*value.header, *(c for r in value.rows for c in r)])
    return bool(value.categories) and all(s.values for s in value.series)


def page_fields(template: TemplateSpec) -> dict[str, list[str]]:
    return {page.page_type: [f.name for f in page.fields] for page in template.pages}


@pytest.mark.parametrize("pick", range(len(CODES)))
async def test_a_deck_on_each_shipped_template(tmp_path: Path, pick: int) -> None:
    async with app_on(tmp_path, "openai", deck_answers, SchemaOnly(pick)) as (client, _, _):
        events = await ask(client, REQUEST, "c-deck", "pptx")
        [build] = await stored_builds(f"sqlite+aiosqlite:///{tmp_path}/app.db", "c-deck")

    assert build.template_code == CODES[pick]
    assert_whole_deck(events, page_fields(SHIPPED[CODES[pick]]), build.ppt_schema or "")


async def test_one_slide_changed_alone(tmp_path: Path) -> None:
    """A slide of any page is a choice at the schema's root: OpenAI gets it without strict."""
    async with app_on(tmp_path, "openai", deck_answers, SchemaOnly()) as (client, fake, _):
        await ask(client, REQUEST, "c-deck", "pptx")
        events = await ask(client, "change slide 2: fewer words", "c-deck", "pptx")
        first, second = await stored_builds(f"sqlite+aiosqlite:///{tmp_path}/app.db", "c-deck")

    assert events[-1]["status"] == "completed", events[-3:]
    assert fake.requests[-1]["response_format"]["json_schema"]["strict"] is False
    before = DeckSchema.model_validate_json(first.ppt_schema or "")
    after = DeckSchema.model_validate_json(second.ppt_schema or "")
    assert [s for n, s in enumerate(after.slides) if n != 1] == [
        s for n, s in enumerate(before.slides) if n != 1
    ]
    assert all(filled(value) for value in after.slides[1].fields.values())


async def test_a_deck_on_an_uploaded_template(tmp_path: Path) -> None:
    async with app_on(tmp_path, "openai", deck_answers, SchemaOnly()) as (client, _, _):
        files = {"file": ("acme.pptx", company_template(), PPTX)}
        uploaded = (await client.post("/file/upload", files=files)).json()["data"]["fileId"]
        events = await ask(client, REQUEST, "c-own", "pptx", template_file_id=uploaded)
        [build] = await stored_builds(f"sqlite+aiosqlite:///{tmp_path}/app.db", "c-own")

    [ready] = [e for e in events if e["type"] == "deck" and e["stage"] == "ready"]
    fields = {layout["pageType"]: layout["placeholders"] for layout in ready["layouts"]}
    assert_whole_deck(events, fields, build.ppt_schema or "")


async def test_a_deck_where_the_schema_says_the_order_of_the_slides(tmp_path: Path) -> None:
    """Gemini takes `prefixItems`: the cover and closing slide are the schema's, not mended."""
    async with app_on(tmp_path, "gemini", deck_answers, SchemaOnly(1)) as (client, _, _):
        events = await ask(client, REQUEST, "c-deck", "pptx")
        [build] = await stored_builds(f"sqlite+aiosqlite:///{tmp_path}/app.db", "c-deck")

    assert_whole_deck(events, page_fields(SHIPPED[CODES[1]]), build.ppt_schema or "")
    assert "Mended:" not in text_of(events, "thinking")


async def test_deep_research_reaches_its_report(tmp_path: Path, fake_search: FakeTavily) -> None:
    async with app_on(tmp_path, "openai", over_http, SchemaOnly(), fake_search) as (client, _, _):
        events = await ask(client, "How big is the heat pump market?", "c-deep", "deep")

    assert events[-1]["status"] == "completed", events[-3:]
    assert [len(e["tasks"]) for e in events if e["type"] == "plan"] == [1]
    assert text_of(events) == REPORT


async def test_three_follow_up_questions_come(tmp_path: Path) -> None:
    def answers(server: ScriptedServer, body: Body) -> str:
        asked = server.system_text(body).startswith(FOLLOW_UPS)
        return '{"questions": []}' if asked else "Solar panels turn light into current."

    async with app_on(tmp_path, "openai", answers, SchemaOnly(), recommendations_enabled=True) as (
        client,
        _,
        _,
    ):
        events = await ask(client, "How do solar panels work?", "c-chat", "skills")

    [recommend] = [e for e in events if e["type"] == "recommend"]
    assert recommend["count"] == 3
