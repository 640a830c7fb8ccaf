"""The PowerPoint builder end to end: over HTTP, on a fake model and a fake search.

What a user sees: questions when the request lacks something, a deck that
downloads and opens with the slides asked for, a stopped or failed build that
continues where it was, and a change that becomes a new version while the
old one stays downloadable. The stored build (`ai_ppt_inst`) is checked where
the user cannot see it but relies on it: FAILED with its step.
"""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path
from typing import Any

import httpx
import orjson
from pptx import Presentation

from app.config import Settings
from app.store.deck_builds import DeckBuild
from tests.conftest import require_binary
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import (
    Backend,
    history,
    running_service,
    settings_for,
    settings_with_search,
)
from tests.support.decks import FULL_REQUIREMENT, DeckModel, deck, slide, stored_builds
from tests.support.sse import Event, collect, text_of

TITLES = [
    "Solar power",
    "What we will cover",
    "How a panel works",
    "From light to current",
    "Solar or coal",
    "A rooftop system",
    "Costs over time",
    "Where it is going",
    "What you can do",
    "Thank you",
]
SHORT = [
    "Solar",
    "Agenda",
    "Panels",
    "Current",
    "Sun\\coal\tvs",
    "Rooftop",
    "Costs",
    "Future",
    "You",
]
"""Shorter titles; one with a backslash and a tab, which broke the original's frames."""
NO_PREVIEWS = {"pptx_previews": False}
"""Previews start LibreOffice (a second or two of CPU a deck): only their own test has them."""
LINK = re.compile(r"\[[^\]]+\]\((/file/download/[0-9a-f]+)\)")


async def ask(client: httpx.AsyncClient, query: str, conversation: str) -> list[Event]:
    params = {"query": query, "conversationId": conversation}
    async with client.stream("GET", "/agent/pptx/stream", params=params) as response:
        assert response.status_code == 200
        return await collect(response)


async def slide_titles(client: httpx.AsyncClient, url: str) -> list[str]:
    """Download a deck and read its slide titles back with python-pptx."""
    response = await client.get(url)
    assert response.status_code == 200
    deck = Presentation(io.BytesIO(response.content))
    return [
        next(shape.text_frame.text for shape in slide.shapes if shape.name == "title")
        for slide in deck.slides
    ]


async def builds(settings: Settings, conversation: str) -> list[DeckBuild]:
    return await stored_builds(settings.database_url, conversation)


def thinking(events: list[Event]) -> str:
    return text_of(events, "thinking")


async def test_a_request_missing_details_is_answered_with_questions_then_the_deck(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    partial = {**FULL_REQUIREMENT, "audience": None, "slideCount": None}
    model = DeckModel(TITLES)
    model.answers["REQUIREMENT"] = [
        orjson_text({**partial, "ask": "Who is the audience, and how many slides?"})
    ]
    fake_llm.responder = model
    settings = settings_for(backend, tmp_path, fake_llm, **NO_PREVIEWS)
    async with running_service(settings) as client:
        asked = await ask(client, "A friendly deck about solar power", "c-ask")
        done = await ask(client, "High-school students, 10 slides", "c-ask")
        turns = await history(client, "c-ask")
        [link] = LINK.findall(text_of(done))
        titles = await slide_titles(client, link)

    assert asked[-1]["status"] == "paused"
    assert text_of(asked) == "Who is the audience, and how many slides?"
    assert [t["status"] for t in turns] == ["paused", "completed"]
    assert done[-1]["status"] == "completed"
    [file_event] = [e for e in done if e["type"] == "file"]
    assert file_event["url"] == link
    assert file_event["name"] == "Solar power v1.pptx"
    assert turns[1]["files"][0]["fileId"] == file_event["fileId"]
    assert titles == TITLES
    previews = [(e["stage"], len(e["slides"])) for e in done if e["type"] == "deck"]
    outlines = [count for stage, count in previews if stage == "outline"]
    # The outline is shown as it is written, a few slides at a time, then whole.
    assert len(outlines) > 2
    assert outlines == sorted(outlines)
    assert outlines[-1] == 10
    assert previews[-1] == ("ready", 10)
    for line in ("Template: Ocean", "Outline: 10 slides", "Rendering…"):
        assert line in thinking(done)
    # The answer went back to the requirement step, with the first request.
    assert model.asked["REQUIREMENT"] == 2
    [build] = await builds(settings, "c-ask")
    assert (build.status, build.version, build.file_id) == ("SUCCESS", 1, file_event["fileId"])


async def test_a_deck_comes_with_a_png_preview_of_each_slide(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    require_binary("soffice", "LibreOffice (Debian's libreoffice-impress)")
    fake_llm.responder = DeckModel(TITLES)
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as client:
        events = await ask(client, "10 friendly slides on solar power for students", "c-png")
        [ready] = [e for e in events if e["type"] == "deck" and e["stage"] == "ready"]
        images = [await client.get(url) for url in ready["thumbnails"]]

    assert len(images) == len(TITLES)
    for image in images:
        assert image.status_code == 200
        assert image.content.startswith(b"\x89PNG")
        assert image.headers["content-type"].startswith("image/png")


async def test_a_build_stopped_after_its_search_continues_without_searching_again(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    model = DeckModel(TITLES)
    model.answers["TEMPLATE"] = [Reply.hang()]
    fake_llm.responder = model
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search, **NO_PREVIEWS)
    async with running_service(settings) as client:
        params = {
            "query": "10 friendly slides on solar power for students",
            "conversationId": "c-stop",
        }
        async with client.stream("GET", "/agent/pptx/stream", params=params) as response:
            reading = asyncio.create_task(collect(response))
            await model.waiting.setdefault("TEMPLATE", asyncio.Event()).wait()
            stop = await client.get("/agent/stop", params={"conversationId": "c-stop"})
            stopped = await reading
        [during] = await builds(settings, "c-stop")
        searches = list(fake_search.queries)
        resumed = await ask(client, "继续", "c-stop")
        [link] = LINK.findall(text_of(resumed))
        titles = await slide_titles(client, link)

    assert stop.json()["success"] is True
    assert stopped[-1]["status"] == "stopped"
    assert [e["toolName"] for e in stopped if e["type"] == "tool_end"] == ["web_search"] * 2
    assert during.status == "TEMPLATE"
    assert "Resuming the build at TEMPLATE" in thinking(resumed)
    assert resumed[-1]["status"] == "completed"
    assert not [e for e in resumed if e["type"] == "tool_start"]
    assert fake_search.queries == searches
    assert model.asked["REQUIREMENT"] == 1
    assert titles == TITLES


async def test_a_build_stopped_during_its_search_continues_without_the_searches_done(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_llm.responder = DeckModel(TITLES)
    settings = settings_with_search(
        Backend(sqlite_url, "", ""), tmp_path, fake_llm, fake_search, **NO_PREVIEWS
    )
    async with running_service(settings) as client:
        params = {"query": "10 friendly slides on solar power", "conversationId": "c-search"}
        async with client.stream("GET", "/agent/pptx/stream", params=params) as response:
            reading = asyncio.create_task(collect(response))
            await fake_search.started.wait()  # the first search, answered at once
            fake_search.hang, fake_search.started = True, asyncio.Event()
            await fake_search.started.wait()  # the second, which never answers
            await client.get("/agent/stop", params={"conversationId": "c-search"})
            stopped = await reading
        [during] = await builds(settings, "c-search")
        fake_search.hang = False
        resumed = await ask(client, "continue", "c-search")

    first, second = fake_search.queries[:2]
    assert stopped[-1]["status"] == "stopped"
    assert during.status == "SEARCH"
    assert first in (during.search_info or "")
    assert resumed[-1]["status"] == "completed"
    # Only the search the stop cut short runs again.
    assert fake_search.queries == [first, second, second]
    assert [e["toolName"] for e in resumed if e["type"] == "tool_start"] == ["web_search"]


async def test_a_change_makes_version_2_and_version_1_stays_downloadable(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    model = DeckModel([*TITLES[:9], "Thanks"], modified=[*SHORT, "Thanks"])
    fake_llm.responder = model
    settings = settings_for(backend, tmp_path, fake_llm, **NO_PREVIEWS)
    async with running_service(settings) as client:
        first = await ask(client, "10 friendly slides on solar power for students", "c-mod")
        second = await ask(client, "Shorter titles, please", "c-mod")
        [v1] = LINK.findall(text_of(first))
        v2, earlier = LINK.findall(text_of(second))
        titles_v1 = await slide_titles(client, v1)
        titles_v2 = await slide_titles(client, v2)
        kept = await builds(settings, "c-mod")
        await client.delete("/session/c-mod")
        gone = (await client.get(v1)).status_code, await builds(settings, "c-mod")

    assert second[-1]["status"] == "completed"
    assert earlier == v1
    [ready] = [e for e in second if e["type"] == "deck"]
    assert [(v["version"], v["url"]) for v in ready["versions"]] == [(1, v1), (2, v2)]
    assert [s["title"] for s in ready["slides"]] == [*SHORT, "Thanks"]
    assert v2 != v1
    assert titles_v1 == [*TITLES[:9], "Thanks"]
    assert titles_v2 == [*SHORT, "Thanks"]
    assert model.asked["MODIFY"] == 1
    # The change edits the slides; the outline is not written again.
    assert model.asked["OUTLINE"] == 1
    assert [(b.version, b.status) for b in kept] == [(1, "SUCCESS"), (2, "SUCCESS")]
    # Deleting the conversation takes its builds and their decks with it.
    assert gone == (404, [])


async def test_an_invalid_template_choice_is_retried_then_fails_stored_and_retry_resumes(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    model = DeckModel(TITLES)
    wrong = orjson_text({"templateCode": "rainbow", "reason": "pretty"})
    model.answers["TEMPLATE"] = [wrong, wrong]
    fake_llm.responder = model
    settings = settings_for(backend, tmp_path, fake_llm, **NO_PREVIEWS)
    async with running_service(settings) as client:
        failed = await ask(client, "10 friendly slides on solar power for students", "c-fail")
        [build] = await builds(settings, "c-fail")
        retried = await ask(client, "retry", "c-fail")
        turns = await history(client, "c-fail")

    [error] = [e for e in failed if e["type"] == "error"]
    assert error["code"] == "PPT_INVALID_PLAN"
    assert "rainbow" in error["detail"]
    assert failed[-1]["status"] == "failed"
    assert model.asked["TEMPLATE"] == 3
    assert (build.status, build.failed_step) == ("FAILED", "TEMPLATE")
    assert build.error_msg is not None
    assert "retry" in build.error_msg
    assert retried[-1]["status"] == "completed"
    assert model.asked["REQUIREMENT"] == 1
    assert [t["status"] for t in turns] == ["failed", "completed"]


async def test_a_deck_answer_is_mended_and_only_its_missing_slides_are_asked_for_alone(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    model = DeckModel(TITLES)
    one_slide = {"slides": [{"pageType": "cover", "fields": {"title": "x" * 500}}]}
    model.answers["SCHEMA"] = ['{"slides": [ not json', orjson_text(one_slide)]
    fake_llm.responder = model
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm, **NO_PREVIEWS)
    async with running_service(settings) as client:
        done = await ask(client, "10 friendly slides on solar power", "c-schema")
        [link] = LINK.findall(text_of(done))
        titles = await slide_titles(client, link)

    assert done[-1]["status"] == "completed"
    # Not JSON: the deck is asked for again. One slide of ten: the cover's title is cut to
    # its budget and its empty subtitle taken from the outline; the nine missing slides
    # are asked for, each alone.
    assert model.asked["SCHEMA"] == 2
    assert model.asked["ONE_SLIDE"] == 9
    assert titles == ["x" * 59 + "…", *TITLES[1:]]
    notes = thinking(done)
    assert "Mended: slide 1: title: 500 characters, cut to 60." in notes
    assert "Mended: slide 1: subtitle: empty; filled from the outline." in notes
    assert "Slide 2 again: Slide 2 is missing." in notes


async def test_a_slide_still_wrong_when_asked_alone_fails_the_build_naming_that_slide(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    model = DeckModel(TITLES)
    written = deck(TITLES)
    # The outline plans a section page third; a chart cannot be mended into one.
    written["slides"][2] = slide("Costs", "chart")
    model.answers["SCHEMA"] = [orjson_text(written)]
    model.answers["ONE_SLIDE"] = ["Sorry, I cannot.", "Sorry, I cannot."]
    fake_llm.responder = model
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm, **NO_PREVIEWS)
    async with running_service(settings) as client:
        failed = await ask(client, "10 friendly slides on solar power", "c-slide")
        [build] = await builds(settings, "c-slide")
        [stored] = await history(client, "c-slide")

    [error] = [e for e in failed if e["type"] == "error"]
    assert error["code"] == "PPT_INVALID_PLAN"
    assert error["message"] == (
        "Writing slide 3 failed: the model's answer could not be used, even when asked again"
        " (The answer must be one JSON object). Say “retry” to try it again."
    )
    assert (stored["error"], stored["errorMessage"]) == ("PPT_INVALID_PLAN", error["message"])
    assert (model.asked["SCHEMA"], model.asked["ONE_SLIDE"]) == (1, 2)
    assert (build.status, build.failed_step, build.error_msg) == (
        "FAILED",
        "SCHEMA",
        error["message"],
    )


async def test_a_render_past_its_time_limit_fails_at_render(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.responder = DeckModel(TITLES)
    settings = settings_for(
        Backend(sqlite_url, "", ""), tmp_path, fake_llm, pptx_render_timeout_seconds=1e-9
    )
    async with running_service(settings) as client:
        failed = await ask(client, "10 friendly slides on solar power", "c-slow")
        [build] = await builds(settings, "c-slow")
        files = (await client.get("/file/list")).json()["data"]

    assert [e["code"] for e in failed if e["type"] == "error"] == ["PPT_RENDER_TIMEOUT"]
    assert (build.status, build.failed_step) == ("FAILED", "RENDER")
    assert files == []


def orjson_text(value: dict[str, Any]) -> str:
    return orjson.dumps(value).decode()


async def test_deleting_a_conversation_drops_its_deck_builds_and_a_new_deck_starts_at_v1(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.responder = DeckModel(TITLES)
    settings = settings_for(backend, tmp_path, fake_llm, **NO_PREVIEWS)
    async with running_service(settings) as client:
        await ask(client, "A deck about solar power", "c-gone")
        built = await builds(settings, "c-gone")
        deleted = await client.delete("/session/c-gone")
        left = await builds(settings, "c-gone")
        again = await ask(client, "A deck about solar power", "c-gone")

    assert [b.version for b in built] == [1]
    assert deleted.status_code == 200
    assert left == []
    [file_event] = [e for e in again if e["type"] == "file"]
    assert file_event["name"] == "Solar power v1.pptx"
