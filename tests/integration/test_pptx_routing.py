"""The PowerPoint agent in the test's process, on the scripted model
(tests/support/scripted_model.py): which way a later message takes a conversation's deck
(rules first, then the model), a step that fails, and a whole deck on each template.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents import pptx
from app.agents.pptx.agent import PptAgent
from app.agents.pptx.render import read_deck
from app.agents.pptx.schema import DeckSchema
from app.agents.pptx.templates import TemplateLibrary
from app.config import Settings
from app.store.db import Database
from app.store.deck_builds import SqlDeckBuildStore
from tests.integration.service import service_settings
from tests.support.agents import agent_core, run_turn
from tests.support.decks import DeckModel, deck, deck_bytes
from tests.support.scripted_model import ScriptedModel
from tests.support.sse import text_of

TITLES = ["Solar power", "Agenda", "How it works", "Panels", "Costs", "Thanks"]
REQUEST = "6 friendly slides on solar power for students"


def scripted(model: DeckModel, calls: int = 20) -> ScriptedModel:
    return ScriptedModel(*[model.scripted] * calls)


async def statuses(settings: Settings, conversation: str = "c1") -> list[tuple[int, str]]:
    async with Database.open(settings.database_url, pool_size=1, migrate=False) as db:
        builds = await SqlDeckBuildStore(db).versions("u1", conversation)
    return [(b.version, b.status) for b in builds]


async def listed_templates(settings: Settings) -> list[str]:
    async with Database.open(settings.database_url, pool_size=1, migrate=False) as db:
        return await SqlDeckBuildStore(db).template_codes()


def agent_of(built: object) -> PptAgent:
    assert isinstance(built, PptAgent)
    return built


async def test_an_unreadable_routing_answer_falls_back_to_a_new_deck(
    tmp_path: Path, sqlite_url: str
) -> None:
    model = DeckModel(TITLES)
    model.answers["INTENT"] = ["no idea"]
    settings = service_settings(tmp_path, sqlite_url, pptx_previews=False)
    async with agent_core(settings, scripted(model)) as core:
        agent = agent_of(pptx.build(core, settings))
        await run_turn(agent, REQUEST)
        second = await run_turn(agent, "Now one on wind power")

    assert second[-1].wire()["status"] == "completed"
    # A new deck asks for its requirements again and writes a new outline.
    assert (model.asked["REQUIREMENT"], model.asked["OUTLINE"]) == (2, 2)
    assert await statuses(settings) == [(1, "SUCCESS"), (2, "SUCCESS")]
    # The templates the package ships are listed in ai_ppt_template, as the original had them.
    assert await listed_templates(settings) == ["ember", "ocean", "paper"]


async def test_resume_asked_of_a_finished_deck_changes_it_instead(
    tmp_path: Path, sqlite_url: str
) -> None:
    model = DeckModel(TITLES, modified=[t.upper() for t in TITLES], intent="resume")
    settings = service_settings(tmp_path, sqlite_url, pptx_previews=False)
    async with agent_core(settings, scripted(model)) as core:
        agent = agent_of(pptx.build(core, settings))
        await run_turn(agent, REQUEST)
        second = await run_turn(agent, "Go on with the titles in capitals")

    assert "Changing version 1 into 2" in text_of([e.wire() for e in second], "thinking")
    assert model.asked["MODIFY"] == 1
    assert await statuses(settings) == [(1, "SUCCESS"), (2, "SUCCESS")]


async def test_a_continue_word_on_a_paused_build_fills_in_what_was_asked(
    tmp_path: Path, sqlite_url: str
) -> None:
    model = DeckModel(TITLES)
    model.answers["REQUIREMENT"] = ['{"topic": "solar power", "ask": "For whom, how many?"}']
    settings = service_settings(tmp_path, sqlite_url, pptx_previews=False)
    async with agent_core(settings, scripted(model)) as core:
        agent = agent_of(pptx.build(core, settings))
        first = await run_turn(agent, "Solar power deck")
        paused = await statuses(settings)
        await run_turn(agent, "continue: students, 6 slides, friendly")

    assert first[-1].wire()["status"] == "paused"
    assert paused == [(1, "PAUSED")]
    # No routing question is needed: a paused build takes the next message as its answer.
    assert "INTENT" not in model.asked
    assert await statuses(settings) == [(1, "SUCCESS")]


async def test_an_outline_invalid_twice_fails_the_build_at_outline(
    tmp_path: Path, sqlite_url: str
) -> None:
    model = DeckModel(TITLES)
    model.answers["OUTLINE"] = ['{"title": "Solar", "slides": []}', "no outline today"]
    settings = service_settings(tmp_path, sqlite_url, pptx_previews=False)
    async with agent_core(settings, scripted(model)) as core:
        events = await run_turn(agent_of(pptx.build(core, settings)), REQUEST)

    [error] = [e.wire() for e in events if e.wire()["type"] == "error"]
    assert error["code"] == "PPT_INVALID_PLAN"
    assert error["detail"].startswith("OUTLINE: The answer must be one JSON object")
    assert events[-1].wire()["status"] == "failed"
    assert await statuses(settings) == [(1, "FAILED")]


@pytest.mark.parametrize("template", sorted(TemplateLibrary().templates))
async def test_the_agent_builds_a_whole_deck_on_each_template(
    template: str, tmp_path: Path, sqlite_url: str
) -> None:
    titles = [*TITLES[:-1], "Questions", "Thanks"]
    model = DeckModel(titles, template=template)
    settings = service_settings(tmp_path, sqlite_url, pptx_previews=False)
    async with agent_core(settings, scripted(model)) as core:
        events = await run_turn(agent_of(pptx.build(core, settings)), REQUEST)
        data = await deck_bytes(core, events)

    spec = TemplateLibrary().templates[template]
    plan = DeckSchema.model_validate(deck(titles))
    slides = read_deck(data)
    assert [s.title for s in slides] == titles
    for wanted, slide in zip(plan.slides, slides, strict=True):
        page = spec.page(wanted.page_type)
        assert page is not None
        assert set(slide.fields) == {f.name for f in page.fields}
        assert all(slide.fields[f.name].strip() for f in page.fields)
