"""Every agent kind against every way a model answers: each turn comes to what the table says.

One app per vendor and behaviour (tests/fakes/model_behaviours.py), its model
that vendor's fake in that behaviour; the six kinds ask their question at
once, over HTTP, each kind with a behaviour of its own (`invalid-once` cuts
the first JSON answer of each turn, not only of the app's first). The host
agent's remote agent is the app itself, over A2A, so the turns it delegates
meet the behaviour too. Each cell must come to what `EXPECTED` says
(tests/support/behaviour_table.py, shown in docs/develop/model-behaviours.md):

- `completed`: the answer stored, every tool call the kind makes shown
  `ok` when reopened and paired start to end in the stream, and three
  follow-up questions; a deck of the slides asked for, cover first and
  closing slide last;
- `completed, no follow-ups`: the same without the questions;
- `paused`: the turn asks the user, its question stored as its answer;
- `failed: <step>`: the stream ends `error` then `complete`, its
  `error.message` names the step (`<step> failed: ...`, not a generic
  sentence) and the reopened turn says the same.

Anything else a cell shows (a call interrupted, two calls under one id, a
sentence that names no step) is its outcome instead, so the row differs
from the table and the assertion says in which cell and how.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.agents.deep.rules import STEP_NAMES as RESEARCH_STEPS
from app.agents.pptx.steps import STEP_NAMES as DECK_STEPS
from app.agents.recommend import PROMPT as FOLLOW_UPS
from app.factory import create_app
from tests.fakes.model_behaviours import BEHAVIOURS, Behaving, Behaviour
from tests.fakes.model_servers import FAKE_PROVIDERS
from tests.fakes.scripted_server import Body, Reply, ScriptedServer
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import ask, history, service_settings
from tests.support.behaviour_table import (
    COMPLETED,
    EXPECTED,
    KINDS,
    NO_FOLLOW_UPS,
    PAUSED,
    failed,
)
from tests.support.decks import STEP_PROMPTS, DeckModel
from tests.support.processes import free_port
from tests.support.research import REPORT, over_http
from tests.support.server import serve
from tests.support.sse import Event, text_of

Calls = tuple[tuple[str, Body], ...]
SLIDES = 5
QUESTIONS = {
    "chat": "Are heat pumps worth it?",
    "file": "What does the note say?",
    "pptx": f"A deck of {SLIDES} slides on solar power for students",
    "deep": "How big is the heat pump market?",
    "skills": "Which skill fits a sales table?",
    "host": "Ask around about wind power.",
}
DELEGATED = "wind power"
"""In every request of the host's turn and of the turns it delegates, and in no other."""
NOTE = b"Heat pumps move heat rather than make it. They last about twenty years."
FOLLOW_UP_ANSWER = '{"questions": ["How loud are they?", "What do they cost?", "Who fits them?"]}'
DECK = DeckModel(["Solar power", "Agenda", "How it works", "Costs", "Thank you"])
STEP_SENTENCES = {*DECK_STEPS.values(), *RESEARCH_STEPS.values()}
ONE_SLIDE = re.compile(r"Writing slide \d+")


@dataclass(frozen=True)
class ReAct:
    """A turn of tool calls: rounds of parallel calls, then the answer."""

    opening: str
    """How the agent's system prompt starts."""
    rounds: tuple[Calls, ...]
    answer: str
    before: int = 0
    """Tool results the agent gathers itself before the model's first round."""

    @property
    def calls(self) -> int:
        return self.before + sum(len(calls) for calls in self.rounds)

    def __call__(self, server: ScriptedServer, body: Body) -> str | Reply:
        results = server.tool_result_count(body) - self.before
        for done, calls in zip(accumulate(len(c) for c in self.rounds), self.rounds, strict=True):
            if results < done:
                return Reply.tool_calls(calls)
        return self.answer


REACT = {
    "chat": ReAct(
        "You are a research assistant",
        (
            (("web_search", {"query": "heat pump prices"}), ("web_search", {"query": "costs"})),
            (("web_search", {"query": "winter efficiency"}),),
        ),
        "Heat pumps pay for themselves in about eight years [1].",
    ),
    "file": ReAct(
        "You answer questions about a document",
        ((("search_document", {"query": "lifetime"}), ("search_document", {"query": "heat"})),),
        "The note says heat pumps last about twenty years (paragraph 1).",
        before=1,
    ),
    "skills": ReAct(
        "You get work done with tools",
        (
            (("load_skill", {"name": "data-summary"}), ("load_skill", {"name": "docx-report"})),
            (("list_files", {"path": "."}),),
        ),
        "The data-summary skill fits a sales table.",
    ),
    "host": ReAct(
        "You are a coordinator",
        (
            (
                ("a2a_dodo_agent", {"message": f"Is {DELEGATED} cheap?", "skill": "chat"}),
                ("a2a_dodo_agent", {"message": f"Is {DELEGATED} steady?", "skill": "chat"}),
            ),
        ),
        "Wind power is cheap, say the agents [1].",
    ),
}
ANSWERS = {kind: react.answer for kind, react in REACT.items()} | {"deep": REPORT}
CALLS = {kind: react.calls for kind, react in REACT.items()} | {"pptx": 2}
"""The tool calls each kind's turn makes (a deck: its research's; deep research: one search
for each task of its plan)."""


def answers(server: ScriptedServer, body: Body) -> str | Reply:
    """What the model answers any request of any kind, by the prompt it was sent."""
    system = server.system_text(body)
    if system.startswith(FOLLOW_UPS):
        return FOLLOW_UP_ANSWER
    for react in REACT.values():
        if system.startswith(react.opening):
            return react(server, body)
    if system.startswith(tuple(STEP_PROMPTS.values())):
        return DECK.answer(system)
    return over_http(server, body)


def kind_of(server: ScriptedServer, body: Body) -> str:
    """Whose turn a request is part of (the host's, for the turns it delegates)."""
    sent = str(body)
    if DELEGATED in sent:
        return "host"
    system = server.system_text(body)
    if system.startswith(FOLLOW_UPS):
        return next(kind for kind, question in QUESTIONS.items() if question in sent)
    for kind, react in REACT.items():
        if system.startswith(react.opening):
            return kind
    return "pptx" if system.startswith(tuple(STEP_PROMPTS.values())) else "deep"


@dataclass
class EachKind:
    """The fake's responder: each kind's requests answered in a behaviour of its own."""

    server: ScriptedServer
    behaving: dict[str, Behaving]

    @classmethod
    def playing(cls, server: ScriptedServer, make: Callable[[], Behaviour]) -> EachKind:
        return cls(server, {kind: Behaving(server, answers, make()) for kind in KINDS})

    def __call__(self, body: Body) -> Reply:
        return self.behaving[kind_of(self.server, body)](body)


@contextlib.asynccontextmanager
async def app_in(
    tmp_path: Path, vendor: str, behaviour: str, search: FakeTavily
) -> AsyncIterator[httpx.AsyncClient]:
    """The app, its model `vendor`'s fake in `behaviour`; its one remote agent is itself."""
    port = free_port()
    async with FAKE_PROVIDERS[vendor]() as fake:
        fake.responder = EachKind.playing(fake, BEHAVIOURS[behaviour])
        settings = service_settings(
            tmp_path,
            f"sqlite+aiosqlite:///{tmp_path}/app.db",
            llm_provider=vendor,
            llm_base_url=fake.base_url,
            tavily_api_key="tvly-test",
            tavily_base_url=search.base_url,
            a2a_agents=f"http://127.0.0.1:{port}",
            recommendations_enabled=True,
            pptx_previews=False,
        )
        async with (
            serve(create_app(settings), port=port) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            yield client


async def outcome(client: httpx.AsyncClient, kind: str, file_id: str) -> str:
    """What the kind's turn came to, as the table names it, or what went wrong."""
    conversation = f"c-{kind}"
    attached = file_id if kind == "file" else None
    events = await ask(client, QUESTIONS[kind], conversation, kind, attached)
    [stored] = await history(client, conversation)
    status: str = events[-1]["status"]
    if status != stored["status"]:
        return f"{status}, stored {stored['status']}"
    if status == "failed":
        return failure(events, stored)
    if status == "paused":
        asked = text_of(events)
        return PAUSED if asked and stored["answer"] == asked else f"paused, asking {asked!r}"
    if status != "completed":
        return status
    problems = [*answer_problems(kind, events, stored), *call_problems(kind, events, stored)]
    if problems:
        return "completed, but " + "; ".join(problems)
    follow_ups = tuple(e["count"] for e in events if e["type"] == "recommend")
    return {(): NO_FOLLOW_UPS, (3,): COMPLETED}.get(follow_ups, f"follow-ups {follow_ups}")


def failure(events: list[Event], stored: dict[str, Any]) -> str:
    error = events[-2]
    if error["type"] != "error":
        return f"failed without an error: {events[-3:]}"
    message: str = error["message"]
    step, named, _ = message.partition(" failed: ")
    if not named or not (step in STEP_SENTENCES or ONE_SLIDE.fullmatch(step)):
        return f"failed, naming no step: {message}"
    if stored["errorMessage"] != message:
        return f"failed: {step}, but reopened it says {stored['errorMessage']!r}"
    return failed(step)


def answer_problems(kind: str, events: list[Event], stored: dict[str, Any]) -> list[str]:
    expected = ANSWERS.get(kind)
    if not stored["answer"] or stored["answer"] != (expected or text_of(events)):
        return [f"answer {stored['answer']!r}"]
    if kind != "pptx":
        return []
    [ready] = [e for e in events if e["type"] == "deck" and e["stage"] == "ready"]
    pages = [slide["pageType"] for slide in ready["slides"]]
    if (len(pages), pages[0], pages[-1]) != (SLIDES, "cover", "closing"):
        return [f"slides {pages}"]
    return [] if [e for e in events if e["type"] == "file"] else ["no deck file"]


def call_problems(kind: str, events: list[Event], stored: dict[str, Any]) -> list[str]:
    tools = stored["tools"]
    problems = [f"{t['name']} {t['result'][:60]!r}" for t in tools if t["isError"]]
    ids = Counter(t["id"] for t in tools)
    calls = CALLS.get(kind) or len(next(e for e in events if e["type"] == "plan")["tasks"])
    if len(ids) != calls:
        problems.append(f"{len(ids)} calls of their own, not {calls}")
    for started_or_ended in ("tool_start", "tool_end"):
        if Counter(e["toolCallId"] for e in events if e["type"] == started_or_ended) != ids:
            problems.append(f"the {started_or_ended} events name other calls")
    return problems


@pytest.mark.parametrize(
    ("vendor", "behaviour"),
    [(vendor, behaviour) for vendor, rows in EXPECTED.items() for behaviour in rows],
)
async def test_every_agent_kind_comes_to_what_the_table_says(
    tmp_path: Path, fake_search: FakeTavily, vendor: str, behaviour: str
) -> None:
    async with app_in(tmp_path, vendor, behaviour, fake_search) as client:
        upload = await client.post("/file/upload", files={"file": ("note.txt", NOTE)})
        file_id = upload.json()["data"]["fileId"]
        found = await asyncio.gather(*(outcome(client, kind, file_id) for kind in KINDS))

    assert dict(zip(KINDS, found, strict=True)) == EXPECTED[vendor][behaviour]
