"""Decks as a model would write them for the shipped templates, for the PowerPoint agent's tests."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import orjson

from app.agents.pptx.templates import PAGE_TYPES, PageType
from app.agents.turn import AgentCore
from app.core.events import Event, FileEvent
from app.store.db import Database
from app.store.deck_builds import DeckBuild, SqlDeckBuildStore
from tests.fakes.scripted_server import Reply
from tests.support.scripted_model import ModelRequest

_FIELDS: dict[PageType, dict[str, Any]] = {
    "cover": {"subtitle": "An introduction for high-school students"},
    "agenda": {"items": ["How it works", "What it costs", "Where it goes next"]},
    "section": {"subtitle": "From sunlight to current"},
    "bullets": {"bullets": ["Silicon cells turn light into current", "Inverters make AC"]},
    "comparison": {
        "left_heading": "Solar",
        "left_points": ["No fuel", "Quiet"],
        "right_heading": "Coal",
        "right_points": ["Smoke", "Fuel to buy"],
    },
    "image_text": {
        "body": "A home system of 15 panels covers most daytime use.",
        "caption": "Roof",
    },
    "table": {
        "table": {"header": ["Year", "Cost per watt"], "rows": [["2010", "$2"], ["2020", "$0.3"]]}
    },
    "chart": {
        "chart": {
            "chartType": "bar",
            "categories": ["2010", "2015", "2020"],
            "series": [{"name": "Cost per watt ($)", "values": [2, 0.8, 0.3]}],
        }
    },
    "closing": {"subtitle": "Questions welcome"},
}


def page_types(count: int) -> list[PageType]:
    """A plausible order of `count` page types: cover first, closing last, every kind used once."""
    middle = [p for p in PAGE_TYPES if p not in ("cover", "closing")]
    body = [middle[i % len(middle)] for i in range(count - 2)]
    return ["cover", *body, "closing"]


def outline(titles: list[str]) -> dict[str, Any]:
    types = page_types(len(titles))
    return {
        "title": titles[0],
        "slides": [
            {"title": t, "pageType": p, "points": [t]} for t, p in zip(titles, types, strict=True)
        ],
    }


def deck(titles: list[str], *, own_template: bool = False) -> dict[str, Any]:
    """A deck schema filling every field of the page type each title gets; `own_template`:
    as for a user's template matched from python-pptx's default layouts (no caption)."""
    types = page_types(len(titles))
    return {
        "slides": [
            slide(t, p, own_template=own_template) for t, p in zip(titles, types, strict=True)
        ]
    }


def slide(title: str, page_type: PageType, *, own_template: bool = False) -> dict[str, Any]:
    fields = {"title": title, **_FIELDS[page_type]}
    if own_template:
        fields.pop("caption", None)
    return {"pageType": page_type, "fields": fields}


STEP_PROMPTS = {
    "INTENT": "You route messages",
    "REQUIREMENT": "You prepare a PowerPoint deck",
    "TEMPLATE": "Choose the template",
    "OUTLINE": "Write the outline",
    "SCHEMA": "Write every slide",
    "MODIFY": "You edit an existing",
    "SLIDE": "You rewrite one slide",
    "ONE_SLIDE": "You write one slide",
}
_ONE_SLIDE = re.compile(r'Write slide (\d+): "(.*)", a "(\w+)" page')
_EDITED_SLIDE = re.compile(r"This is slide (\d+) of (\d+)")
FULL_REQUIREMENT = {
    "topic": "solar power",
    "audience": "high-school students",
    "slideCount": 10,
    "style": "friendly",
    "language": "English",
    "ask": None,
}


@dataclass
class DeckModel:
    """A fake model's answers for the PowerPoint agent, chosen by the step its prompt names.

    `answers[step]` are answered first, in order (JSON text, or a `Reply` such as a
    hang); then the step's default: a full requirement, the `template`, an outline
    and a deck of `titles`, `modified` titles for a change, `intent` for routing.
    `asked[step]` counts the requests, and `waiting[step]` is set when one arrives.
    """

    titles: list[str]
    modified: list[str] = field(default_factory=list)
    template: str = "ocean"
    intent: str = "modify"
    own_template: bool = False
    """Slides as for a user's template (`deck(own_template=True)`)."""
    answers: dict[str, list[str | Reply]] = field(default_factory=dict)
    asked: dict[str, int] = field(default_factory=dict)
    waiting: dict[str, asyncio.Event] = field(default_factory=dict)

    def __call__(self, body: dict[str, Any]) -> Reply:
        """The answer as the HTTP fake (`FakeOpenAI.responder`) plays it."""
        answer = self.answer(str(body["messages"][0]["content"]))
        return answer if isinstance(answer, Reply) else Reply.text(answer, chunks=3)

    def scripted(self, request: ModelRequest) -> str:
        """The answer as a `ScriptedModel` step gives it (text only: no hangs in-process)."""
        answer = self.answer(request.messages[0].text_content())
        assert isinstance(answer, str)
        return answer

    def answer(self, system: str) -> str | Reply:
        step = next(s for s, opening in STEP_PROMPTS.items() if system.startswith(opening))
        self.asked[step] = self.asked.get(step, 0) + 1
        self.waiting.setdefault(step, asyncio.Event()).set()
        queued = self.answers.get(step)
        return queued.pop(0) if queued else self._default(step, system)

    def _default(self, step: str, system: str) -> str:
        asked, edited = _ONE_SLIDE.search(system), _EDITED_SLIDE.search(system)
        answers: dict[str, Callable[[], Any]] = {
            "INTENT": lambda: {"intent": self.intent},
            "REQUIREMENT": lambda: {**FULL_REQUIREMENT, "slideCount": len(self.titles)},
            "TEMPLATE": lambda: {"templateCode": self.template, "reason": "fits"},
            "OUTLINE": lambda: outline(self.titles),
            "SCHEMA": lambda: deck(self.titles, own_template=self.own_template),
            "MODIFY": lambda: deck(self.modified),
            "SLIDE": lambda: edited and self._edited(int(edited.group(1)), int(edited.group(2))),
            "ONE_SLIDE": lambda: (
                asked
                and slide(
                    asked.group(2), cast(PageType, asked.group(3)), own_template=self.own_template
                )
            ),
        }
        return orjson.dumps(answers[step]()).decode()

    def _edited(self, number: int, count: int) -> dict[str, Any]:
        """Slide `number` of a deck of `count`, titled as `modified` says (else as before)."""
        titles = self.modified or self.titles
        return slide(titles[number - 1], page_types(count)[number - 1])


async def deck_bytes(core: AgentCore, events: list[Event], user_id: str = "u1") -> bytes:
    """The bytes of the one deck a turn made, read back from the document library."""
    [made] = [e for e in events if isinstance(e, FileEvent) and e.name.endswith(".pptx")]
    assert core.documents is not None
    stored = await core.documents.get(user_id, made.file_id)
    assert stored is not None
    return b"".join([chunk async for chunk in await core.documents.download(stored)])


async def stored_builds(database_url: str, conversation: str) -> list[DeckBuild]:
    """The local user's deck builds of a conversation (`ai_ppt_inst`), oldest first."""
    async with Database.open(database_url, pool_size=1, migrate=False) as db:
        return await SqlDeckBuildStore(db).versions("local", conversation)
