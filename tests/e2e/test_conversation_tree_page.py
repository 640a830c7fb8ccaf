"""The chat page's corrections (API.md §4): edit, regenerate, versions, delete, rename, search,
export.

Each test uses the page as a person would, in Chromium, and where it helps reads
the stored conversation back through the API: what the page shows must be what
the server keeps. Follow-up suggestions are off, so each turn is one scripted
model reply.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest_asyncio
from playwright.async_api import Locator, Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, PHONE, Upstreams, artifact
from tests.e2e.test_chat_page import ask, assert_fits_width
from tests.fakes.scripted_server import Reply
from tests.support.server import serve

pytestmark = LOOP


@pytest_asyncio.fixture(loop_scope="package")
async def app_url(app_settings: Callable[..., Settings]) -> AsyncIterator[str]:
    async with serve(create_app(app_settings(recommendations_enabled=False))) as url:
        yield url


async def answered(page: Page, question: str, answer: str) -> Locator:
    """Ask, and wait for the answer to be in."""
    turn = await ask(page, question)
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".answer")).to_have_text(answer)
    return turn


def conversation_of(page: Page) -> str:
    return urlsplit(page.url).fragment.removeprefix("c=")


async def stored(app_url: str, conversation: str) -> list[dict[str, Any]]:
    """The conversation's active path, as the history answers it."""
    async with httpx.AsyncClient(base_url=app_url) as client:
        response = await client.get(f"/session/{conversation}")
    assert response.status_code == 200
    messages: list[dict[str, Any]] = response.json()["data"]["messages"]
    return messages


async def stream_query(page: Page, action: Callable[[], Any]) -> dict[str, Any]:
    """The fields of the stream `action` opens: a POST's JSON body, nothing in the URL."""
    async with page.expect_request("**/agent/chat/stream") as request:
        await action()
    sent = await request.value
    assert (sent.method, urlsplit(sent.url).query) == ("POST", "")
    body = sent.post_data_json
    assert isinstance(body, dict)
    return body


async def open_drawer(page: Page) -> None:
    """On a phone the list is in a drawer: open it."""
    await page.locator("#menu-button").click()
    await expect(page.locator("#sidebar")).to_be_in_viewport()


async def test_the_pencil_edits_a_question_and_sends_it_as_a_new_branch(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.text("Paris."),
        Reply.text("About 2 million."),
        Reply.text("About 67 million."),
        Reply.text("Berlin."),
    )
    await page.goto(app_url)
    await answered(page, "Capital of France?", "Paris.")
    second = await answered(page, "How many people live in it?", "About 2 million.")
    conversation = conversation_of(page)
    first_id = (await stored(app_url, conversation))[0]["id"]

    await second.locator("button", has_text="✎").click()
    box = second.get_by_label("Edited question")
    await expect(box).to_be_focused()
    await expect(box).to_have_value("How many people live in it?")
    await page.screenshot(path=artifact("chat-page-edit.png"))
    await box.fill("How many people live in France?")
    query = await stream_query(page, lambda: box.press("Enter"))

    assert query["parentId"] == first_id
    assert query["query"] == "How many people live in France?"
    turns = page.locator(".turn")
    await expect(turns).to_have_count(2)
    edited = turns.last
    await expect(edited).to_have_attribute("data-status", "completed")
    await expect(edited.locator(".question")).to_have_text("How many people live in France?")
    await expect(edited.locator(".answer")).to_have_text("About 67 million.")
    await expect(edited.locator(".version-count")).to_have_text("2/2")
    path = await stored(app_url, conversation)
    assert [m["question"] for m in path] == [
        "Capital of France?",
        "How many people live in France?",
    ]
    assert path[1]["parentId"] == first_id
    assert len(path[1]["siblings"]) == 2

    # The first question too, by keyboard: it is sent again as a new first question.
    await turns.first.get_by_role("button", name="Edit question").focus()
    await page.keyboard.press("Enter")
    await page.keyboard.press("Escape")
    await expect(turns.first.locator(".question")).to_have_text("Capital of France?")
    await expect(turns.first.get_by_role("button", name="Edit question")).to_be_focused()
    await page.keyboard.press("Enter")
    await page.keyboard.press("Control+A")
    await page.keyboard.type("Capital of Germany?")
    query = await stream_query(page, lambda: page.keyboard.press("Enter"))
    assert query["parentId"] == 0
    await expect(turns).to_have_count(1)
    await expect(turns.first.locator(".answer")).to_have_text("Berlin.")
    await expect(turns.first.locator(".version-count")).to_have_text("2/2")
    assert [m["question"] for m in await stored(app_url, conversation)] == ["Capital of Germany?"]
    # Never renamed, the conversation is named by the first question it now starts with.
    await expect(page.locator(".conversations .open .title")).to_have_text(["Capital of Germany?"])


async def test_regenerate_asks_again_and_the_new_answer_is_a_sibling(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("A first try."), Reply.text("A second try."))
    await page.set_viewport_size(PHONE)
    await page.goto(app_url)
    turn = await answered(page, "Write me a haiku", "A first try.")
    conversation = conversation_of(page)
    first_id = (await stored(app_url, conversation))[0]["id"]

    regenerate = turn.get_by_role("button", name="Regenerate answer")
    await expect(regenerate).to_be_visible()
    await assert_fits_width(page, PHONE["width"])

    # Refused (the conversation busy elsewhere): the answer there was is shown again.
    busy = {"code": 409, "message": "This conversation is busy.", "data": None}
    await page.route("**/agent/chat/stream", lambda route: route.fulfill(status=409, json=busy))
    await regenerate.click()
    await expect(page.locator("#notice-text")).to_have_text("This conversation is busy.")
    await expect(turn.locator(".answer")).to_have_text("A first try.")
    await expect(turn.locator(".versions-switch")).to_have_count(0)
    await page.unroute("**/agent/chat/stream")

    query = await stream_query(page, regenerate.click)

    assert query["regenerate"] == first_id
    assert "query" not in query
    turn = page.locator(".turn")
    await expect(turn).to_have_count(1)
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".question")).to_have_text("Write me a haiku")
    await expect(turn.locator(".answer")).to_have_text("A second try.")
    await expect(turn.locator(".version-count")).to_have_text("2/2")
    await assert_fits_width(page, PHONE["width"])
    await page.screenshot(path=artifact("chat-page-regenerated-phone.png"))
    [latest] = await stored(app_url, conversation)
    assert latest["answer"] == "A second try."
    assert latest["siblings"] == [first_id, latest["id"]]


async def test_the_switcher_shows_another_version_and_the_path_below_it(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("One."), Reply.text("Two."), Reply.text("One, again."))
    await page.goto(app_url)
    await answered(page, "First?", "One.")
    await answered(page, "Second?", "Two.")
    turns = page.locator(".turn")
    await turns.first.get_by_role("button", name="Regenerate answer").click()
    await expect(turns).to_have_count(1)
    await expect(turns.first.locator(".answer")).to_have_text("One, again.")
    await expect(turns.first).to_have_attribute("data-status", "completed")
    conversation = conversation_of(page)

    previous = turns.first.get_by_role("button", name="Previous version")
    async with page.expect_response("**/active") as switched:
        await previous.click()
    assert (await switched.value).request.method == "POST"
    # The old version comes back with the turn that followed it.
    await expect(turns).to_have_count(2)
    await expect(turns.first.locator(".answer")).to_have_text("One.")
    await expect(turns.first.locator(".version-count")).to_have_text("1/2")
    await expect(turns.last.locator(".answer")).to_have_text("Two.")
    await expect(turns.last.locator(".versions-switch")).to_have_count(0)
    await page.screenshot(path=artifact("chat-page-versions.png"))
    # The keyboard stays on the switcher: Enter on it goes forward again.
    next_version = turns.first.get_by_role("button", name="Next version")
    await expect(next_version).to_be_focused()
    assert [m["answer"] for m in await stored(app_url, conversation)] == ["One.", "Two."]

    await page.keyboard.press("Enter")
    await expect(turns).to_have_count(1)
    await expect(turns.first.locator(".answer")).to_have_text("One, again.")
    await expect(turns.first.locator(".version-count")).to_have_text("2/2")
    await expect(turns.first.get_by_role("button", name="Previous version")).to_be_focused()

    # The choice is the server's: a reload shows the same path.
    await page.reload()
    await expect(turns).to_have_count(1)
    await expect(turns.first.locator(".answer")).to_have_text("One, again.")


async def test_delete_takes_a_turn_with_what_follows_and_a_lone_turn_its_conversation(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.text("Paris."), Reply.text("About 2 million."), Reply.text("The Seine.")
    )
    await page.goto(app_url)
    await answered(page, "Capital of France?", "Paris.")
    await answered(page, "How many people live in it?", "About 2 million.")
    await answered(page, "Which river runs through it?", "The Seine.")
    conversation = conversation_of(page)

    delete = page.locator(".turn").nth(1).get_by_role("button", name="Delete")
    await delete.click()
    await expect(delete).to_have_text("Delete this and what follows? Press again")
    asked_only = await stored(app_url, conversation)
    await page.screenshot(path=artifact("chat-page-delete-turn.png"))
    await delete.click()

    turns = page.locator(".turn")
    await expect(turns).to_have_count(1)
    await expect(turns.locator(".answer")).to_have_text("Paris.")
    await expect(page.locator("#question")).to_be_focused()
    assert len(asked_only) == 3
    assert [m["question"] for m in await stored(app_url, conversation)] == ["Capital of France?"]

    await turns.get_by_role("button", name="Delete").click()
    await turns.get_by_role("button", name="Delete this and what follows? Press again").click()
    await expect(page.locator(".turn")).to_have_count(0)
    await expect(page.locator(".conversations .open")).to_have_count(0)
    async with httpx.AsyncClient(base_url=app_url) as client:
        gone = await client.get(f"/session/{conversation}")
    assert gone.status_code == 404


async def test_a_conversation_is_renamed_from_its_menu(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Take the train."))
    await page.set_viewport_size(PHONE)
    await page.goto(app_url)
    await answered(page, "How do I get from Paris to Lyon?", "Take the train.")
    await open_drawer(page)
    title = page.locator(".conversations .open .title")
    await expect(title).to_have_text(["How do I get from Paris to Lyon?"])

    menu = page.get_by_role("button", name="More for “How do I get from Paris to Lyon?”")
    await menu.focus()
    await page.keyboard.press("Enter")
    await expect(menu).to_have_attribute("aria-expanded", "true")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Rename")).to_be_focused()
    await page.screenshot(path=artifact("chat-page-menu-phone.png"))
    await page.keyboard.press("Enter")
    box = page.get_by_label("New title")
    await expect(box).to_be_focused()
    await page.keyboard.type("Trip to Lyon")
    await page.keyboard.press("Enter")

    await expect(title).to_have_text(["Trip to Lyon"])
    await expect(page.locator(".conversations .open").first).to_be_focused()
    await assert_fits_width(page, PHONE["width"])
    async with httpx.AsyncClient(base_url=app_url) as client:
        listed = (await client.get("/session/list")).json()["data"]["records"]
    assert [r["title"] for r in listed] == ["Trip to Lyon"]
    await page.reload()
    await expect(title).to_have_text(["Trip to Lyon"])


INJECTED = '<img src="x" onerror="window.__pwned = true"> where is the Needle hidden?'


async def test_search_finds_the_text_marks_the_match_and_opens_the_conversation(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Under the hay."), Reply.text("Nothing to find here."))
    await page.goto(app_url)
    await answered(page, INJECTED, "Under the hay.")
    needle_conversation = conversation_of(page)
    await page.locator("#new-chat").click()
    await answered(page, "Something else entirely", "Nothing to find here.")

    search = page.get_by_label("Search conversations")
    await search.fill("needle")
    results = page.locator(".search-results li")
    await expect(results).to_have_count(1)
    await expect(page.locator("#conversations")).to_be_hidden()
    await expect(page.locator("#search-status")).to_have_text("1 match")
    await expect(results.locator(".title")).to_have_text(INJECTED)
    await expect(results.locator(".snippet")).to_contain_text(INJECTED)
    await expect(results.locator(".snippet mark")).to_have_text(["Needle"])
    await expect(page.locator(".search-results img")).to_have_count(0)
    assert await page.evaluate("window.__pwned") is None
    await page.screenshot(path=artifact("chat-page-search.png"))

    await search.fill("no such words")
    await expect(page.locator("#search-status")).to_have_text("No matches.")
    await expect(results).to_have_count(0)
    await search.fill("NEEDLE")
    await expect(results.locator(".snippet mark")).to_have_text(["Needle"])
    await results.locator("button").click()
    await expect(page.locator(".turn .question")).to_have_text(INJECTED)
    await expect(page.locator(".turn .answer")).to_have_text("Under the hay.")
    await expect(page.locator(".turn.found .question")).to_have_text(INJECTED)
    assert conversation_of(page) == needle_conversation

    await search.press("Escape")
    await expect(search).to_have_value("")
    await expect(page.locator(".conversations .open")).to_have_count(2)
    await expect(page.locator(".search-results")).to_be_hidden()


async def test_search_lists_a_turn_once_on_the_version_shown(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.text("In rafts."), Reply.text("Holding paws."), Reply.text("On their backs.")
    )
    await page.goto(app_url)
    turn = await answered(page, "Where do otters sleep?", "In rafts.")
    for answer in ("Holding paws.", "On their backs."):
        await turn.get_by_role("button", name="Regenerate answer").click()
        await expect(turn.locator(".answer")).to_have_text(answer)
        await expect(turn).to_have_attribute("data-status", "completed")
    previous = turn.get_by_role("button", name="Previous version")
    await previous.click()
    await expect(turn.locator(".version-count")).to_have_text("2/3")
    await previous.click()
    await expect(turn.locator(".answer")).to_have_text("In rafts.")
    await page.locator("#new-chat").click()

    await page.get_by_label("Search conversations").fill("otters")
    results = page.locator(".search-results li")
    await expect(page.locator("#search-status")).to_have_text("1 match")
    await expect(results).to_have_count(1)
    await results.locator("button").click()
    found = page.locator(".turn.found")
    await expect(found.locator(".answer")).to_have_text("In rafts.")
    await expect(found.locator(".version-count")).to_have_text("1/3")


async def asked_through_the_api(app_url: str, questions: list[str]) -> None:
    """Each question a conversation of its own, asked as a script would."""
    async with httpx.AsyncClient(base_url=app_url, timeout=30) as client:
        for number, question in enumerate(questions):
            params = {"query": question, "conversationId": f"older-{number}"}
            async with client.stream("GET", "/agent/chat/stream", params=params) as response:
                assert response.status_code == 200
                await response.aread()


async def test_search_reads_older_matches_below_the_newest_on_request(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    questions = [f"Zebrafish fact number {n}?" for n in range(1, 24)]
    upstreams.llm.script(*(Reply.text(f"Fact {n}.") for n in range(1, 24)))
    await asked_through_the_api(app_url, questions)
    await page.goto(app_url)

    await page.get_by_label("Search conversations").fill("zebrafish")
    results = page.locator(".search-results li")
    status = page.locator("#search-status")
    older = page.get_by_role("button", name="Show older matches")
    await expect(results).to_have_count(20)
    await expect(status).to_have_text("23 matches, the newest 20 shown")
    await expect(results.first.locator(".title")).to_have_text("Zebrafish fact number 23?")
    await older.click()

    await expect(results).to_have_count(23)
    await expect(status).to_have_text("23 matches")
    await expect(older).to_be_hidden()
    await expect(results.last.locator(".title")).to_have_text("Zebrafish fact number 1?")
    await expect(results.nth(20).locator("button")).to_be_focused()


async def test_export_downloads_markdown_and_json_from_the_menu(
    page: Page, app_url: str, upstreams: Upstreams, tmp_path: Path
) -> None:
    upstreams.llm.script(Reply.text("Green *tea*."))
    await page.set_viewport_size(PHONE)
    await page.goto(app_url)
    await answered(page, "What should I drink?", "Green tea.")
    conversation = conversation_of(page)
    await open_drawer(page)

    async def export(title: str, label: str) -> tuple[str, str]:
        await page.get_by_role("button", name=f"More for “{title}”").click()
        async with page.expect_download() as started:
            await page.get_by_role("button", name=label).click()
        download = await started.value
        saved = tmp_path / download.suggested_filename
        await download.save_as(saved)
        return download.suggested_filename, saved.read_text()

    # Named after the conversation's title (without the "?" a file name cannot hold).
    name, markdown = await export("What should I drink?", "Download Markdown")
    assert name == "What should I drink.md"
    assert "## Question\n\nWhat should I drink?" in markdown
    assert "Green *tea*." in markdown
    name, text = await export("What should I drink?", "Download JSON")
    assert name == "What should I drink.json"
    exported = json.loads(text)
    assert exported["conversationId"] == conversation
    assert [m["answer"] for m in exported["messages"]] == ["Green *tea*."]
    await expect(page.locator(".menu:visible")).to_have_count(0)

    # A title in any script is kept whole.
    async with httpx.AsyncClient(base_url=app_url) as client:
        renamed = await client.patch(f"/session/{conversation}", json={"title": "Thé / 绿茶"})
        assert renamed.status_code == 200
    await page.reload()
    await expect(page.locator(".turn .answer")).to_have_text("Green tea.")
    await open_drawer(page)
    name, _ = await export("Thé / 绿茶", "Download Markdown")
    assert name == "Thé 绿茶.md"
