"""The PowerPoint builder in a conversation you can correct: a regeneration makes a new
deck version and both stay downloadable, a paused build is answered only on its own branch,
and a deleted branch takes its deck.

Over HTTP on each backend, with the fake model playing `DeckModel`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import Backend, history, running_service, settings_for
from tests.integration.test_pptx_agent import (
    LINK,
    NO_PREVIEWS,
    SHORT,
    TITLES,
    builds,
    orjson_text,
    slide_titles,
)
from tests.support.decks import FULL_REQUIREMENT, DeckModel
from tests.support.sse import Event, collect, text_of

SOLAR = "10 friendly slides on solar power for students"


async def deck(client: httpx.AsyncClient, conversation: str, **fields: Any) -> list[Event]:
    """One whole PowerPoint turn with the given stream fields."""
    params = {"conversationId": conversation, **{k: str(v) for k, v in fields.items()}}
    async with client.stream("GET", "/agent/pptx/stream", params=params) as response:
        assert response.status_code == 200, await response.aread()
        return await collect(response)


async def test_a_regenerated_deck_is_a_new_version_and_both_stay_downloadable(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    model = DeckModel(TITLES)
    fake_llm.responder = model
    settings = settings_for(backend, tmp_path, fake_llm, **NO_PREVIEWS)
    async with running_service(settings) as client:
        first = await deck(client, "c-again", query=SOLAR)
        model.titles = [*SHORT, "Thanks"]
        again = await deck(client, "c-again", regenerate=first[0]["sessionId"])
        [v1] = LINK.findall(text_of(first))
        v2, earlier = LINK.findall(text_of(again))
        titles = await slide_titles(client, v1), await slide_titles(client, v2)
        built = await builds(settings, "c-again")
        stored = await history(client, "c-again")
        # The regeneration's branch deleted: its deck goes, the first one stays.
        deleted = await client.delete(f"/session/c-again/turns/{again[0]['sessionId']}")
        after = (await client.get(v1)).status_code, (await client.get(v2)).status_code
        left = await builds(settings, "c-again")

    assert again[-1]["status"] == "completed"
    assert (v2 != v1, earlier) == (True, v1)
    assert titles == (TITLES, [*SHORT, "Thanks"])
    # Built anew from the request, beside the first: not a change of it, not routed by the model.
    assert [(b.version, b.status, b.query) for b in built] == [
        (1, "SUCCESS", SOLAR),
        (2, "SUCCESS", SOLAR),
    ]
    assert (model.asked.get("INTENT"), model.asked["OUTLINE"], model.asked.get("MODIFY")) == (
        None,
        2,
        None,
    )
    [file_event] = [e for e in again if e["type"] == "file"]
    assert file_event["name"].endswith(" v2.pptx")
    [turn] = stored
    assert turn["siblings"] == [first[0]["sessionId"], again[0]["sessionId"]]
    assert [f["fileId"] for f in turn["files"]] == [file_event["fileId"]]
    assert deleted.status_code == 200
    assert after == (200, 404)
    # With the build it began: a change on the first branch builds on version 1 alone.
    assert [(b.version, b.status) for b in left] == [(1, "SUCCESS")]


async def test_a_paused_build_is_answered_only_on_its_own_branch(
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
        asked = await deck(client, "c-fork", query="A friendly deck about solar power")
        # The request edited: a deck of its own, not the answer to the paused one.
        edited = await deck(client, "c-fork", query=SOLAR, parentId=0)
        after_edit = await builds(settings, "c-fork")
        answered = await deck(
            client, "c-fork", query="High-school students", parentId=asked[0]["sessionId"]
        )
        built = await builds(settings, "c-fork")

    assert [t[-1]["status"] for t in (asked, edited, answered)] == [
        "paused",
        "completed",
        "completed",
    ]
    assert [(b.version, b.status) for b in after_edit] == [(1, "PAUSED"), (2, "SUCCESS")]
    assert [(b.version, b.status, b.query) for b in built] == [
        (1, "SUCCESS", "A friendly deck about solar power\nHigh-school students"),
        (2, "SUCCESS", SOLAR),
    ]
    assert "Resuming the build at REQUIREMENT" in text_of(answered, "thinking")
