"""Deep research, the deck builder and the skills agent end to end, whatever way the model
answers their JSON steps.

The real app over HTTP, its model a vendor's fake answering by the step its
prompt names, in one of the behaviours of `tests/fakes/model_behaviours.py`:
a model that answers JSON only when asked natively (on every provider), the
prompt-only fallback (`LLM_STRUCTURED_OUTPUT=prompt`, and a server refusing
the native field), and the model behaviours met in the field. Each run
completes; the follow-up questions, a nicety asked once, are left out when
their one answer is unusable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from app.agents.recommend import PROMPT as FOLLOW_UPS
from tests.fakes.model_behaviours import (
    ANSWER_KEEPING,
    Behaving,
    Behaviour,
    IgnoresNative,
    NativeOnly,
)
from tests.fakes.model_servers import FAKE_PROVIDERS
from tests.fakes.scripted_server import Body, Reply, ScriptedServer
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import app_on, ask
from tests.support.decks import DeckModel
from tests.support.research import REPORT, over_http
from tests.support.sse import Event, text_of

PROVIDERS = sorted(FAKE_PROVIDERS)
TITLES = ["Solar power", "Agenda", "How it works", "Costs", "Thank you"]
QUESTIONS = ["Is it cheap?", "Does it work in winter?", "Who installs it?"]


def status(events: list[Event]) -> str:
    return str(events[-1]["status"])


async def research(
    tmp_path: Path, provider: str, behaviour: Behaviour, search: FakeTavily, **settings: Any
) -> tuple[list[Event], ScriptedServer, Behaving]:
    async with app_on(tmp_path, provider, over_http, behaviour, search, **settings) as (
        client,
        fake,
        behaving,
    ):
        events = await ask(client, "How big is the heat pump market?", "c-deep", "deep")
    return events, fake, behaving


def assert_researched(events: list[Event]) -> None:
    assert status(events) == "completed", events[-2:]
    [plan] = [e for e in events if e["type"] == "plan"]
    assert [t["title"] for t in plan["tasks"]] == ["Market size", "Running costs"]
    assert [e["passed"] for e in events if e["type"] == "critique"] == [True]
    assert text_of(events) == REPORT


async def build_deck(
    tmp_path: Path, provider: str, behaviour: Behaviour, **settings: Any
) -> tuple[list[Event], ScriptedServer, Behaving]:
    decks = DeckModel(TITLES)

    def answers(server: ScriptedServer, body: Body) -> str | Reply:
        return decks.answer(server.system_text(body))

    async with app_on(tmp_path, provider, answers, behaviour, **settings) as (
        client,
        fake,
        behaving,
    ):
        events = await ask(client, "A deck on solar power", "c-deck", "pptx")
    return events, fake, behaving


def assert_built(events: list[Event]) -> None:
    assert status(events) == "completed", events[-2:]
    [ready] = [e for e in events if e["type"] == "deck" and e["stage"] == "ready"]
    assert [s["title"] for s in ready["slides"]] == TITLES
    assert [e["name"] for e in events if e["type"] == "file"] == ["Solar power v1.pptx"]


def skills_answers(server: ScriptedServer, body: Body) -> str:
    if server.system_text(body).startswith(FOLLOW_UPS):
        return '{"questions": ["Is it cheap?", "Does it work in winter?", "Who installs it?"]}'
    return "Solar panels turn light into current."


async def skills_turn(
    tmp_path: Path, provider: str, behaviour: Behaviour, **settings: Any
) -> tuple[list[Event], ScriptedServer, Behaving]:
    async with app_on(
        tmp_path, provider, skills_answers, behaviour, recommendations_enabled=True, **settings
    ) as (client, fake, behaving):
        events = await ask(client, "How do solar panels work?", "c-skills", "skills")
    return events, fake, behaving


def follow_ups(events: list[Event]) -> list[str] | None:
    found = [e for e in events if e["type"] == "recommend"]
    return [str(q) for q in orjson.loads(found[0]["content"])] if found else None


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_model_answering_json_only_natively_researches_on_every_provider(
    tmp_path: Path, fake_search: FakeTavily, provider: str
) -> None:
    events, _, behaving = await research(tmp_path, provider, NativeOnly(), fake_search)
    assert_researched(events)
    # clarify, plan, critique: each asked natively.
    assert len(behaving.asked) == 3
    assert None not in behaving.asked


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_model_answering_json_only_natively_builds_a_deck_on_every_provider(
    tmp_path: Path, provider: str
) -> None:
    events, _, behaving = await build_deck(tmp_path, provider, NativeOnly())
    assert_built(events)
    # requirement, template, outline, slides: each asked natively.
    assert len(behaving.asked) == 4
    assert None not in behaving.asked


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_model_answering_json_only_natively_suggests_follow_ups_after_a_skills_turn(
    tmp_path: Path, provider: str
) -> None:
    events, _, behaving = await skills_turn(tmp_path, provider, NativeOnly())
    assert status(events) == "completed"
    assert text_of(events) == "Solar panels turn light into current."
    assert follow_ups(events) == QUESTIONS
    assert len(behaving.asked) == 1
    assert None not in behaving.asked


async def test_in_prompt_mode_every_agent_asks_in_the_prompt_alone(
    tmp_path: Path, fake_search: FakeTavily
) -> None:
    prompt = {"llm_structured_output": "prompt"}
    researched, _, deep = await research(
        tmp_path / "deep", "openai", IgnoresNative(), fake_search, **prompt
    )
    built, _, deck = await build_deck(tmp_path / "deck", "openai", IgnoresNative(), **prompt)
    skilled, _, skills = await skills_turn(tmp_path / "skills", "openai", IgnoresNative(), **prompt)

    assert_researched(researched)
    assert_built(built)
    assert follow_ups(skilled) == QUESTIONS
    for behaving in (deep, deck, skills):
        assert behaving.asked
        assert set(behaving.asked) == {None}


async def test_a_model_answering_json_only_natively_fails_clearly_in_prompt_mode(
    tmp_path: Path, fake_search: FakeTavily
) -> None:
    """Told to ask in the prompt alone, such a model cannot be used: the turns say so."""
    prompt = {"llm_structured_output": "prompt"}
    researched, _, _ = await research(
        tmp_path / "deep", "openai", NativeOnly(), fake_search, **prompt
    )
    built, _, _ = await build_deck(tmp_path / "deck", "openai", NativeOnly(), **prompt)

    assert status(researched) == "failed"
    [error] = [e for e in researched if e["type"] == "error"]
    assert error["code"] == "LLM_INVALID_OUTPUT"
    assert "ClarifyDecision" in error["detail"]
    assert status(built) == "failed"
    [error] = [e for e in built if e["type"] == "error"]
    assert error["code"] == "PPT_INVALID_PLAN"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_server_refusing_the_native_field_is_asked_in_the_prompt_from_then_on(
    tmp_path: Path, fake_search: FakeTavily, provider: str
) -> None:
    async with app_on(tmp_path, provider, over_http, IgnoresNative(), fake_search) as (
        client,
        fake,
        behaving,
    ):
        fake.refuses_native = True
        first = await ask(client, "How big is the heat pump market?", "c-1", "deep")
        second = await ask(client, "And in Europe?", "c-2", "deep")

    assert_researched(first)
    assert_researched(second)
    asked_natively = [fake.requested(body) is not None for body in fake.requests]
    # Only the first JSON step asked natively: refused, and never asked so again.
    assert asked_natively.count(True) == 1
    assert asked_natively.index(True) == 0
    assert len(behaving.asked) == 6


@pytest.mark.parametrize("behaviour", sorted(ANSWER_KEEPING))
async def test_every_agent_completes_whatever_way_the_model_answers(
    tmp_path: Path, fake_search: FakeTavily, behaviour: str
) -> None:
    researched, _, _ = await research(
        tmp_path / "deep", "openai", ANSWER_KEEPING[behaviour](), fake_search
    )
    built, _, _ = await build_deck(tmp_path / "deck", "anthropic", ANSWER_KEEPING[behaviour]())
    skilled, _, _ = await skills_turn(tmp_path / "skills", "gemini", ANSWER_KEEPING[behaviour]())

    assert_researched(researched)
    assert_built(built)
    assert status(skilled) == "completed"
    # The follow-ups are asked once: an answer cut off leaves them out, nothing else does.
    assert follow_ups(skilled) == (None if behaviour == "invalid-once" else QUESTIONS)
