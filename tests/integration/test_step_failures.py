"""A structured step that fails says which step it was: in the stream, in the history, in the log.

Each step is made to fail (the model answers it with no JSON, twice) over
HTTP on a vendor's fake: the turn's `error.code` stays the code it always
was, its `error.message` names the step and why in the user's words, the
history of the conversation shows the same sentence (`errorMessage`, as the
page shows it after a reload), AG-UI's `RUN_ERROR` and the AI SDK's `error`
part say it too, and the server logs exactly one WARNING line naming the
step, the model, the problem and the start of the answer. The
steps whose failure a turn absorbs (routing a message about a deck, the
follow-up questions) log their line and go on.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from app.agents.deep.rules import STEP_NAMES as RESEARCH_STEPS
from app.agents.pptx.steps import STEP_NAMES as DECK_STEPS
from app.agents.recommend import PROMPT as FOLLOW_UPS
from app.agents.recommend import STEP as FOLLOW_UP_STEP
from tests.fakes.model_behaviours import Answers, IgnoresNative
from tests.fakes.scripted_server import Body, Reply, ScriptedServer
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import app_on, ask, history
from tests.support.decks import DeckModel
from tests.support.research import over_http, step_named
from tests.support.sse import Event

QUESTION = "How big is the heat pump market?"
REFUSAL = "I would rather not say."
"""What the model answers the failing step, each time it is asked."""
UNREADABLE = "The answer must be one JSON object"
TITLES = ["Solar power", "Agenda", "How it works", "Costs", "Thank you"]
LOGGER = "app.llm.structured"


def failed_sentence(step: str, hint: str = "") -> str:
    return (
        f"{step} failed: the model's answer could not be used, even when asked again"
        f" ({UNREADABLE}).{hint}"
    )


def step_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING
    ]


def assert_one_line(caplog: pytest.LogCaptureFixture, step: str) -> None:
    [line] = step_lines(caplog)
    assert f"structured step {step!r} failed on model default (fake-model)" in line
    assert UNREADABLE in line
    assert repr(REFUSAL) in line


def deck_answers(model: DeckModel) -> Answers:
    """The deck model's answers, to a request as any vendor's fake reads it."""
    return lambda server, body: model.answer(server.system_text(body))


def the_error(events: list[Event]) -> Event:
    [error] = [e for e in events if e["type"] == "error"]
    assert events[-1]["status"] == "failed"
    return error


@pytest.mark.parametrize("step", ["REQUIREMENT", "TEMPLATE", "OUTLINE", "SCHEMA"])
async def test_a_deck_step_that_fails_names_itself(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, step: str
) -> None:
    model = DeckModel(TITLES)
    model.answers[step] = [REFUSAL, REFUSAL]

    caplog.set_level(logging.WARNING, LOGGER)
    async with app_on(tmp_path, "openai", deck_answers(model), IgnoresNative()) as (client, _, _):
        events = await ask(client, "5 friendly slides on solar power", "c-deck", "pptx")
        [stored] = await history(client, "c-deck")

    error = the_error(events)
    sentence = failed_sentence(DECK_STEPS[step], " Say “retry” to try it again.")
    assert (error["code"], error["message"], error["content"]) == (
        "PPT_INVALID_PLAN",
        sentence,
        sentence,
    )
    assert (stored["error"], stored["errorMessage"]) == ("PPT_INVALID_PLAN", sentence)
    assert_one_line(caplog, DECK_STEPS[step])


@pytest.mark.parametrize(
    ("step", "change"),
    [("MODIFY", "Make every slide shorter"), ("SLIDE", "change slide 2: fewer words")],
)
async def test_a_change_to_a_deck_that_fails_names_its_step(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, step: str, change: str
) -> None:
    model = DeckModel(TITLES, modified=TITLES)
    model.answers[step] = [REFUSAL, REFUSAL]

    caplog.set_level(logging.WARNING, LOGGER)
    async with app_on(tmp_path, "openai", deck_answers(model), IgnoresNative()) as (client, _, _):
        built = await ask(client, "5 friendly slides on solar power", "c-deck", "pptx")
        changed = await ask(client, change, "c-deck", "pptx")
        stored = await history(client, "c-deck")

    assert built[-1]["status"] == "completed"
    sentence = failed_sentence(DECK_STEPS[step], " Say “retry” to try it again.")
    assert the_error(changed)["message"] == sentence
    assert [t["errorMessage"] for t in stored] == [None, sentence]
    assert_one_line(caplog, DECK_STEPS[step])


@pytest.mark.parametrize("step", sorted(RESEARCH_STEPS))
async def test_a_research_step_that_fails_names_itself(
    tmp_path: Path, fake_search: FakeTavily, caplog: pytest.LogCaptureFixture, step: str
) -> None:
    def answers(server: ScriptedServer, body: Body) -> str | Reply:
        if step_named(server.system_text(body)) == step:
            return REFUSAL
        return over_http(server, body)

    caplog.set_level(logging.WARNING, LOGGER)
    async with app_on(tmp_path, "openai", answers, IgnoresNative(), fake_search) as (
        client,
        _,
        _,
    ):
        events = await ask(client, QUESTION, "c-deep", "deep")
        [stored] = await history(client, "c-deep")

    error = the_error(events)
    sentence = failed_sentence(RESEARCH_STEPS[step])
    assert (error["code"], error["message"]) == ("LLM_INVALID_OUTPUT", sentence)
    assert (stored["error"], stored["errorMessage"]) == ("LLM_INVALID_OUTPUT", sentence)
    assert_one_line(caplog, RESEARCH_STEPS[step])


async def test_the_sentence_is_the_error_of_every_wire_format(
    tmp_path: Path, fake_search: FakeTavily
) -> None:
    """AG-UI's `RUN_ERROR` and the AI SDK's `error` part say what `error.message` says."""

    def answers(server: ScriptedServer, body: Body) -> str | Reply:
        return (
            REFUSAL if step_named(server.system_text(body)) == "plan" else over_http(server, body)
        )

    message = {"id": "u-1", "role": "user"}
    ag_ui = {"threadId": "c-ag-ui", "runId": "r-1", "messages": [message | {"content": QUESTION}]}
    ai_sdk = {
        "id": "c-ai-sdk",
        "messages": [message | {"parts": [{"type": "text", "text": QUESTION}]}],
    }
    async with app_on(tmp_path, "openai", answers, IgnoresNative(), fake_search) as (client, _, _):
        ag_ui_events = data_of(await client.post("/ag-ui/deep", json=ag_ui))
        ai_sdk_parts = data_of(await client.post("/ai-sdk/deep", json=ai_sdk))

    sentence = failed_sentence(RESEARCH_STEPS["plan"])
    assert (ag_ui_events[-1]["type"], ag_ui_events[-1]["message"]) == ("RUN_ERROR", sentence)
    [error] = [part for part in ai_sdk_parts if part["type"] == "error"]
    assert error["errorText"] == sentence


def data_of(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON `data:` lines of an SSE answer, in order."""
    assert response.status_code == 200, response.text
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return [orjson.loads(line) for line in lines if line != "[DONE]"]


async def test_follow_ups_that_fail_are_left_out_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def answers(server: ScriptedServer, body: Body) -> str:
        asked = server.system_text(body).startswith(FOLLOW_UPS)
        return REFUSAL if asked else "Solar panels turn light into current."

    caplog.set_level(logging.WARNING, LOGGER)
    async with app_on(
        tmp_path, "openai", answers, IgnoresNative(), recommendations_enabled=True
    ) as (client, _, _):
        events = await ask(client, "How do solar panels work?", "c-chat", "skills")

    assert events[-1]["status"] == "completed"
    assert [e for e in events if e["type"] in ("recommend", "error")] == []
    [line] = step_lines(caplog)
    assert f"structured step {FOLLOW_UP_STEP!r} failed on model default (fake-model)" in line
    assert "after 1 answers" in line
    assert repr(REFUSAL) in line


async def test_a_message_that_cannot_be_routed_starts_a_new_deck_and_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = DeckModel(TITLES)
    model.answers["INTENT"] = [REFUSAL]

    caplog.set_level(logging.WARNING, LOGGER)
    async with app_on(tmp_path, "openai", deck_answers(model), IgnoresNative()) as (client, _, _):
        await ask(client, "5 friendly slides on solar power", "c-deck", "pptx")
        second = await ask(client, "Now one on wind power", "c-deck", "pptx")

    assert second[-1]["status"] == "completed"
    [line] = step_lines(caplog)
    assert f"structured step {DECK_STEPS['INTENT']!r} failed" in line
