"""The chat page served at `/`, used in Chromium as a person would use it."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import FilePayload, Locator, Page, Request, Route, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import DESKTOP, LOOP, PHONE, Upstreams, artifact
from tests.fakes.scripted_server import Reply
from tests.support.proxy import cuttable_proxy
from tests.support.server import serve

pytestmark = LOOP


async def ask(page: Page, question: str) -> Locator:
    """Type a question and press Enter; the new turn."""
    await page.locator("#question").fill(question)
    await page.locator("#question").press("Enter")
    return page.locator(".turn").last


async def assert_fits_width(page: Page, width: int) -> None:
    widths = await page.evaluate(
        "[document.documentElement.scrollWidth,"
        " ...[...document.querySelectorAll('.messages, .composer, .topbar')]"
        ".map(e => e.scrollWidth)]"
    )
    assert max(widths) <= width, f"content wider than the {width}px screen: {widths}"


async def test_question_streams_answer_thinking_tools_references_and_follow_ups(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.tool_calls([("web_search", {"query": "python 3.13"})]),
        Reply.text(
            "Python **3.13** is out [1].",
            reasoning="The results say that 3.13 shipped.",
            delay=0.02,
        ),
        Reply.text(
            '{"questions": ["What changed in 3.13?", "Is it faster?", "How do I upgrade?"]}'
        ),
        Reply.text("It is faster in places."),
    )
    await page.goto(app_url)

    await expect(page.locator("#question")).to_be_focused()
    await page.keyboard.type("What is new in Python?")
    await page.keyboard.press("Enter")

    turn = page.locator(".turn").last
    await expect(turn.locator(".question")).to_have_text("What is new in Python?")
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".answer")).to_have_text("Python 3.13 is out [1].")
    await expect(turn.locator(".answer strong")).to_have_text("3.13")
    await expect(turn.locator(".status")).to_contain_text("Answered in")
    await turn.locator(".thinking summary").click()
    await expect(turn.locator(".thinking-text")).to_contain_text(
        "The results say that 3.13 shipped."
    )
    await expect(turn.locator(".tool .tool-name")).to_have_text(["web_search"])
    await expect(turn.locator(".tool .tool-hint")).to_have_text(["python 3.13"])
    await expect(turn.locator(".tool .tool-state")).to_have_text(["done"])
    references = turn.locator(".references a")
    await expect(references).to_have_text(["python 3.13 result 1", "python 3.13 result 2"])
    assert [await a.get_attribute("href") for a in await references.all()] == [
        "https://example.test/python-3.13/1",
        "https://example.test/python-3.13/2",
    ]
    # The answer's `[1]` links to its source.
    citation = turn.locator(".answer a.citation")
    await expect(citation).to_have_text("[1]")
    assert await citation.get_attribute("href") == "https://example.test/python-3.13/1"
    follow_ups = turn.locator(".follow-up")
    await expect(follow_ups).to_have_text(
        ["What changed in 3.13?", "Is it faster?", "How do I upgrade?"]
    )
    await expect(page.locator(".conversations .open .title")).to_have_text(
        ["What is new in Python?"]
    )
    await page.screenshot(path=artifact("chat-page.png"))
    await page.set_viewport_size(PHONE)
    await expect(page.locator("#sidebar")).not_to_be_in_viewport()
    await assert_fits_width(page, PHONE["width"])
    await page.screenshot(path=artifact("chat-page-phone.png"))
    await page.set_viewport_size(DESKTOP)

    await follow_ups.first.click()

    second = page.locator(".turn").nth(1)
    await expect(second.locator(".question")).to_have_text("What changed in 3.13?")
    await expect(second).to_have_attribute("data-status", "completed")
    await expect(second.locator(".answer")).to_have_text("It is faster in places.")
    await expect(follow_ups.first).to_be_hidden()
    # The follow-up went to the same conversation: the model saw the first turn.
    contents = [m.get("content") for m in upstreams.llm.requests[3]["messages"]]
    assert "What is new in Python?" in contents
    assert contents[-1] == "What changed in 3.13?"


async def test_stop_ends_the_answer_mid_stream_and_frees_the_conversation(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.hang(first_text="Partial answer"),
        Reply.hang(first_text="Another partial"),
        Reply.text("Fresh answer."),
    )
    await page.goto(app_url)

    turn = await ask(page, "Tell me a long story")
    # The text shows while the model is still writing: it is streamed, not buffered.
    await expect(turn.locator(".answer")).to_have_text("Partial answer")
    await expect(turn).to_have_attribute("data-status", "running")
    await expect(page.locator("#send")).to_be_disabled()
    await page.locator("#stop").click()

    await expect(turn).to_have_attribute("data-status", "stopped")
    await expect(turn.locator(".status")).to_have_text("Stopped")
    await expect(turn.locator(".answer")).to_have_text("Partial answer")
    await expect(page.locator("#stop")).to_be_hidden()
    await asyncio.wait_for(upstreams.llm.disconnected.wait(), 10)

    # Escape in the question box stops too, so the keyboard alone will do.
    second = await ask(page, "Another long one")
    await expect(second.locator(".answer")).to_have_text("Another partial")
    await page.locator("#question").press("Escape")
    await expect(second).to_have_attribute("data-status", "stopped")

    third = await ask(page, "Shorter, please")
    await expect(third).to_have_attribute("data-status", "completed")
    await expect(third.locator(".answer")).to_have_text("Fresh answer.")
    await expect(third.locator(".error")).to_be_hidden()


async def test_reload_shows_the_conversation_from_history(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Paris is the *capital*.", reasoning="An easy one."))
    await page.goto(app_url)
    turn = await ask(page, "Capital of France?")
    await expect(turn).to_have_attribute("data-status", "completed")

    await page.reload()

    turn = page.locator(".turn")
    await expect(turn).to_have_count(1)
    await expect(turn.locator(".question")).to_have_text("Capital of France?")
    await expect(turn.locator(".answer em")).to_have_text("capital")
    await expect(turn.locator(".status")).to_contain_text("Answered")
    await turn.locator(".thinking summary").click()
    await expect(turn.locator(".thinking-text")).to_have_text("An easy one.")
    current = page.locator(".conversations .open[aria-current=true] .title")
    await expect(current).to_have_text("Capital of France?")

    # A fresh visit opens it from the list, and deleting takes two presses.
    await page.goto(app_url)
    await expect(page.locator(".turn")).to_have_count(0)
    await page.locator(".conversations .open").first.click()
    await expect(page.locator(".turn .answer")).to_have_text("Paris is the capital.")
    await page.locator(".conversations .menu-button").click()
    delete = page.locator(".conversations .delete")
    await delete.click()
    await expect(delete).to_have_text("Delete? Press again")
    await delete.click()
    await expect(page.locator(".conversations li")).to_have_count(0)
    await expect(page.locator(".turn")).to_have_count(0)
    await page.reload()
    await expect(page.locator("#conversations-empty")).to_be_visible()


async def test_an_answer_and_its_code_are_copied_in_one_click(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    gate = asyncio.Event()
    upstreams.llm.script(Reply.gated("Run **this**:\n\n", "```python\nprint('hi')\n```", gate))
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url)
    await page.goto(app_url)
    turn = await ask(page, "How do I greet?")
    await expect(turn.locator(".answer strong")).to_have_text("this")
    copy = turn.get_by_role("button", name="Copy answer")
    # Half an answer is not offered for copying.
    await expect(copy).to_be_hidden()
    gate.set()
    await expect(turn).to_have_attribute("data-status", "completed")

    await copy.click()
    await expect(turn.locator(".copy-answer [role=status]")).to_have_text("Copied")
    answer = await page.evaluate("navigator.clipboard.readText()")
    await turn.get_by_role("button", name="Copy code").click()
    code = await page.evaluate("navigator.clipboard.readText()")

    await page.reload()
    await page.locator(".turn").get_by_role("button", name="Copy answer").click()
    reopened = await page.evaluate("navigator.clipboard.readText()")

    assert answer == reopened == "Run **this**:\n\n```python\nprint('hi')\n```"
    assert code == "print('hi')"


async def test_the_list_is_headed_by_when_each_conversation_was_last_active(
    page: Page, tmp_path: Path, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("One."), Reply.text("Two."), Reply.text("Three."))
    async with serve(create_app(app_settings(recommendations_enabled=False))) as url:
        await page.goto(url)
        for question in ("Last month's question", "This week's question", "Today's question"):
            await page.locator("#new-chat").click()
            await expect(await ask(page, question)).to_have_attribute("data-status", "completed")
        now = datetime.now(UTC)
        long_ago = now - timedelta(days=40)
        # Turns cannot be asked in the past: their times are moved in the database.
        with sqlite3.connect(tmp_path / "app.db") as database:
            for question, when in (
                ("Last month's", long_ago),
                ("This week's", now - timedelta(days=3)),
            ):
                database.execute(
                    "UPDATE ai_session SET update_time = ? WHERE question = ?",
                    (when.strftime("%Y-%m-%d %H:%M:%S.%f"), f"{question} question"),
                )
        await page.reload()
        entries = page.locator(".conversations li").locator("h3, .title")
        await expect(entries).to_have_text(
            [
                "Today",
                "Today's question",
                "Previous 7 days",
                "This week's question",
                f"{long_ago.astimezone():%B %Y}",
                "Last month's question",
            ]
        )


async def test_a_pinned_conversation_leads_the_list_until_unpinned(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("One."), Reply.text("Two."))
    async with serve(create_app(app_settings(recommendations_enabled=False))) as url:
        await page.goto(url)
        for question in ("First question", "Second question"):
            await page.locator("#new-chat").click()
            await expect(await ask(page, question)).to_have_attribute("data-status", "completed")
        entries = page.locator(".conversations li").locator("h3, .title")
        first = page.locator(".conversations li", has_text="First question")

        await first.locator(".menu-button").click()
        await first.get_by_role("button", name="Pin").click()
        pinned = ["Pinned", "First question", "Today", "Second question"]
        await expect(entries).to_have_text(pinned)
        await expect(first.locator(".open")).to_be_focused()
        await page.reload()
        await expect(entries).to_have_text(pinned)

        await first.locator(".menu-button").click()
        await first.get_by_role("button", name="Unpin").click()
        await expect(entries).to_have_text(["Today", "Second question", "First question"])


async def test_a_conversations_menu_left_open_stays_open_when_an_answer_ends(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    gate = asyncio.Event()
    upstreams.llm.script(Reply.text("One."), Reply.gated("Two", " done.", gate))
    async with serve(create_app(app_settings(recommendations_enabled=False))) as url:
        await page.goto(url)
        await expect(await ask(page, "First question")).to_have_attribute(
            "data-status", "completed"
        )
        await page.locator("#new-chat").click()
        second = await ask(page, "Second question")
        await expect(second.locator(".answer")).to_have_text("Two")
        first = page.locator(".conversations li", has_text="First question")
        await first.locator(".menu-button").click()
        drawn = await first.locator(".menu").element_handle()
        gate.set()
        await expect(second).to_have_attribute("data-status", "completed")
        # The answer's end draws the list again: the menu the user opened is still open.
        await page.wait_for_function("menu => !menu.isConnected", arg=drawn)
        await expect(first.locator(".menu-button")).to_have_attribute("aria-expanded", "true")
        await first.get_by_role("button", name="Pin").click()
        entries = page.locator(".conversations li").locator("h3, .title")
        await expect(entries).to_have_text(["Pinned", "First question", "Today", "Second question"])


async def test_keys_start_a_new_chat_and_reach_the_search_box(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Hello."), Reply.text('{"questions": ["A?", "B?", "C?"]}'))
    await page.goto(app_url)
    turn = await ask(page, "Hi")
    await expect(turn).to_have_attribute("data-status", "completed")

    await page.locator("#question").press("Control+k")
    await expect(page.locator("#search-input")).to_be_focused()
    await page.keyboard.press("Control+Shift+O")
    await expect(page.locator(".turn")).to_have_count(0)
    await expect(page.locator("#question")).to_be_focused()
    assert "#c=" not in page.url


INJECTED = (
    'Look: <img src="missing.png" onerror="window.__pwned = true">'
    "<script>window.__pwned = true</script> "
    "[click me](javascript:window.__pwned=true) and **bold**"
)


async def assert_sanitised(page: Page, answer: Locator) -> None:
    await expect(answer.locator("strong")).to_have_text("bold")
    await expect(answer.locator("script")).to_have_count(0)
    image = answer.locator("img")
    await expect(image).to_have_count(1)
    assert await image.get_attribute("onerror") is None
    link = answer.locator("a", has_text="click me")
    assert await link.get_attribute("href") is None
    # The image has failed to load, so an onerror handler would have run by now.
    await expect(image).to_have_js_property("complete", True)
    assert await page.evaluate("window.__pwned") is None


async def test_markdown_sanitiser_blocks_injected_markup(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text(INJECTED))
    await page.goto(app_url)
    turn = await ask(page, "Say something dangerous")
    await expect(turn).to_have_attribute("data-status", "completed")
    await assert_sanitised(page, turn.locator(".answer"))

    await page.reload()
    await assert_sanitised(page, page.locator(".turn .answer"))


async def test_dropped_connection_resumes_without_losing_or_repeating_text(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    answer = " ".join(f"word{n}" for n in range(1, 41))
    upstreams.llm.script(Reply.text(answer, delay=0.1))
    resumed_after: list[int] = []

    def watch(request: Request) -> None:
        if "/agent/resume" in request.url:
            resumed_after.append(int(request.headers.get("last-event-id") or 0))

    page.on("request", watch)
    async with serve(create_app(app_settings())) as url, cuttable_proxy(url) as proxy:
        await page.goto(proxy.url)
        turn = await ask(page, "Count to forty in words")
        await expect(turn.locator(".answer")).to_contain_text("word3")
        proxy.cut()

        await expect(turn).to_have_attribute("data-status", "completed")
        await expect(turn.locator(".answer")).to_have_text(answer)
        await expect(turn.locator(".error")).to_be_hidden()

    assert proxy.cuts >= 1
    # It asked for the events after those it had shown, not for the whole run again.
    assert max(resumed_after, default=0) >= 3, resumed_after


async def test_reload_mid_answer_follows_the_answer_live(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    answer = " ".join(f"step{n}" for n in range(1, 41))
    upstreams.llm.script(Reply.text(answer, delay=0.1))
    await page.goto(app_url)
    turn = await ask(page, "Walk me through it")
    await expect(turn.locator(".answer")).to_contain_text("step2")

    async with page.expect_request("**/agent/resume?**") as rejoin:
        await page.reload()
    assert (await rejoin.value).headers["last-event-id"] == "0"

    turn = page.locator(".turn")
    await expect(turn).to_have_count(1)
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".answer")).to_have_text(answer)


async def test_api_key_is_asked_for_and_sent_when_auth_is_on(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Hello Alice."))
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    async with serve(create_app(app_settings(api_keys="key-alice:alice"))) as url:
        await page.goto(url)
        await expect(page.locator("#auth")).to_be_visible()
        await expect(page.locator("#auth-message")).to_have_text("This server needs an API key.")
        await expect(page.locator("#api-key")).to_be_focused()
        await page.keyboard.type("not-a-key")
        await page.keyboard.press("Enter")
        await expect(page.locator("#auth-message")).to_have_text("The API key was not accepted.")
        await page.screenshot(path=artifact("chat-page-api-key.png"))

        await page.locator("#api-key").fill("key-alice")
        await page.locator("#api-key").press("Enter")
        await expect(page.locator("#auth")).to_be_hidden()
        turn = await ask(page, "Hi there")
        await expect(turn.locator(".answer")).to_have_text("Hello Alice.")

        await page.reload()
        await expect(page.locator(".turn .answer")).to_have_text("Hello Alice.")
        await expect(page.locator("#auth")).to_be_hidden()

    assert not [u for u in urls if "key-alice" in u], "the key must travel in a header only"


async def test_a_key_typed_while_the_first_requests_are_answered_is_kept(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    """On a busy machine the page's first requests, sent with no key, came back 401 while
    the key was being typed (which emptied the box) or once it was saved (which asked for
    it again): CI saw the key box stay open."""
    upstreams.llm.script(Reply.text("Hello Alice."))
    typed, saved, let_go = asyncio.Event(), asyncio.Event(), asyncio.Event()
    held = {"/projects": typed, "/session/list": saved}

    async def hold_keyless(route: Route) -> None:
        release = held.get(urlsplit(route.request.url).path)
        if release is None or "authorization" in route.request.headers:
            await route.continue_()
            return
        await release.wait()
        with contextlib.suppress(PlaywrightError):  # the page gave up on it meanwhile
            await route.continue_()
        if release is saved:
            let_go.set()

    await page.route("**/*", hold_keyless)
    async with serve(create_app(app_settings(api_keys="key-alice:alice"))) as url:
        try:
            await page.goto(url)
            await expect(page.locator("#auth")).to_be_visible()
            await page.locator("#api-key").fill("key-alice")
            # The list is asked for once the projects' 401 has been shown.
            async with page.expect_request("**/session/list?**"):
                typed.set()
            await expect(page.locator("#api-key")).to_have_value("key-alice")
            await page.locator("#api-key").press("Enter")
            await expect(page.locator("#auth")).to_be_hidden()
        finally:
            typed.set()
            saved.set()
        await let_go.wait()
        turn = await ask(page, "Hi there")
        await expect(turn.locator(".answer")).to_have_text("Hello Alice.")
        await expect(page.locator("#auth")).to_be_hidden()
        await expect(page.locator("#notice")).to_be_hidden()


async def test_errors_are_shown_in_plain_words_and_retried_in_one_click(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.error(500),
        Reply.error(500),
        Reply.error(500),
        Reply.text("Light scatters."),
        Reply.text('{"questions": ["Why red at dusk?", "And the sea?", "On Mars?"]}'),
    )
    async with serve(create_app(app_settings(query_max_chars=40))) as url:
        await page.goto(url)
        # Over the limit: the box keeps the text, counts it, and Send says why it waits.
        box, hint = page.locator("#question"), page.locator("#composer-hint")
        await box.fill("Why " * 15)
        await expect(hint).to_have_text("Too long by 20 characters (60 of 40): shorten it to send.")
        await expect(page.locator("#send")).to_be_disabled()
        await box.press("Enter")
        await expect(page.locator(".turn")).to_have_count(0)
        await page.reload()
        await expect(box).to_have_value("Why " * 15)
        await box.fill("Why " * 9)
        await expect(hint).to_have_text("36 of 40 characters")
        await expect(page.locator("#send")).to_be_enabled()

        failed = await ask(page, "Why is the sky blue?")
        await expect(failed).to_have_attribute("data-status", "failed")
        sentence = "The language model is unavailable right now."
        await expect(failed.locator(".error-text")).to_have_text(sentence)
        await expect(box).to_have_value("")
        # Reopened, the failed turn says the same sentence, and Retry asks again at once.
        await page.reload()
        failed = page.locator(".turn")
        await expect(failed.locator(".error-text")).to_have_text(sentence)
        await failed.get_by_role("button", name="Retry").click()

        retried = page.locator(".turn")
        await expect(retried).to_have_count(1)
        await expect(retried).to_have_attribute("data-status", "completed")
        await expect(retried.locator(".answer")).to_have_text("Light scatters.")
        await expect(retried.locator(".version-count")).to_have_text("2/2")


async def test_a_refused_question_goes_back_in_the_box_with_the_servers_reason(
    page: Page, app_url: str
) -> None:
    reason = "A task is already running for this conversation"
    busy = {"code": 409, "message": reason, "data": None}
    await page.route("**/agent/chat/stream", lambda route: route.fulfill(status=409, json=busy))
    await page.goto(app_url)

    await ask(page, "Is anyone there?")

    await expect(page.locator("#notice-text")).to_have_text(reason)
    await expect(page.locator("#question")).to_have_value("Is anyone there?")
    await expect(page.locator(".turn")).to_have_count(0)


async def test_a_second_tab_says_why_it_cannot_send_while_the_first_answers(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.hang(first_text="Thinking it over"))
    await page.goto(app_url)
    turn = await ask(page, "A long one, please")
    await expect(turn.locator(".answer")).to_have_text("Thinking it over")

    second = await page.context.new_page()
    await second.goto(page.url)
    await expect(second.locator(".turn .answer")).to_have_text("Thinking it over")
    await second.locator("#question").fill("And another thing")
    await expect(second.locator("#send")).to_be_disabled()
    await expect(second.locator("#composer-hint")).to_have_text(
        "An answer is still coming: wait for it, or press Stop, to ask again."
    )
    await second.locator("#stop").click()
    await expect(turn).to_have_attribute("data-status", "stopped")
    await expect(second.locator("#send")).to_be_enabled()
    await expect(second.locator("#question")).to_have_value("And another thing")


async def test_a_question_asked_while_the_list_loads_keeps_its_turn(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    """The page once opened the URL's conversation when its list arrived, even when the
    reader had asked a question meanwhile: that aborted the question's request and
    reported the new conversation as gone."""
    upstreams.llm.script(
        Reply.text("An earlier answer."),
        Reply.text('{"questions": ["One?", "Two?", "Three?"]}'),
        Reply.text("Blue light scatters most."),
        Reply.text('{"questions": ["Four?", "Five?", "Six?"]}'),
    )
    listed = asyncio.Event()

    async def hold_until_asked(route: Route) -> None:
        await listed.wait()
        await route.continue_()

    # Every request the page makes, recorded in the page as it makes it.
    await page.add_init_script(
        "window.__fetched = []; const send = window.fetch;"
        "window.fetch = (input, init) => { window.__fetched.push(String(input));"
        " return send(input, init); };"
    )
    async with serve(create_app(app_settings())) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            params = {"query": "Earlier", "conversationId": "earlier"}
            async with client.stream("GET", "/agent/chat/stream", params=params) as response:
                await response.aread()
        await page.route("**/agent/kinds", hold_until_asked)
        await page.route("**/session/list?**", hold_until_asked)
        await page.goto(url)
        answered = await ask(page, "Why is the sky blue?")
        await expect(answered).to_have_attribute("data-status", "completed")

        listed.set()
        # Once the list shows, the page has acted on it: it must not have opened anything.
        await expect(page.locator(".conversations .open")).to_have_count(2)
        fetched: list[str] = await page.evaluate("window.__fetched")
        assert [u for u in fetched if u.startswith("/session/") and "list" not in u] == []
        await expect(answered.locator(".answer")).to_have_text("Blue light scatters most.")
        await expect(page.locator(".turn")).to_have_count(1)
        await expect(page.locator("#notice")).to_be_hidden()


async def test_an_older_list_answer_never_replaces_a_newer_one(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    """The page's first list can arrive after the one loaded when an answer ends (a slow
    start on a busy machine): the conversation just made must stay listed."""
    upstreams.llm.script(Reply.text("Fresh."))
    held, release = asyncio.Event(), asyncio.Event()
    stale = True

    async def answer_the_first_late(route: Route) -> None:
        nonlocal stale
        if not stale:
            await route.continue_()
            return
        stale = False
        response = await route.fetch()  # the list as it was before the question
        held.set()
        await release.wait()
        await route.fulfill(response=response)

    # Every list answer the page has read, recorded in the page as it reads it.
    await page.add_init_script(
        "window.__lists = 0; const json = Response.prototype.json;"
        "Response.prototype.json = async function () { const body = await json.call(this);"
        " if (this.url.includes('/session/list')) window.__lists += 1; return body; };"
    )
    await page.route("**/session/list?**", answer_the_first_late)
    await page.goto(app_url)
    await held.wait()
    turn = await ask(page, "Something new")
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(page.locator(".conversations .open")).to_have_count(1)

    release.set()
    await page.wait_for_function("() => window.__lists >= 2")
    await expect(page.locator(".conversations .open")).to_have_count(1)
    await expect(page.locator("#conversations-empty")).to_be_hidden()


async def test_file_agent_uploads_a_file_and_asks_about_it(page: Page, app_url: str) -> None:
    """The upload endpoints come with the file agent; their answers are given here."""
    await page.goto(app_url)
    await expect(page.locator('#agent option[value="deep"]')).to_have_count(1)
    await page.locator("#agent").select_option("deep")
    await expect(page.locator("#attach")).to_be_hidden()
    await page.locator("#agent").select_option("file")
    await expect(page.locator("#attach")).to_be_visible()
    await ask(page, "Summarise it")
    await expect(page.locator("#notice-text")).to_have_text(
        "Attach a file first: this agent answers questions about it."
    )
    notes = FilePayload(name="notes.txt", mimeType="text/plain", buffer=b"Some notes.")

    missing = {"code": 404, "message": "Not Found", "data": None}
    await page.route("**/file/upload", lambda route: route.fulfill(status=404, json=missing))
    await page.locator("#file-input").set_input_files(files=[notes])
    await expect(page.locator("#notice-text")).to_have_text(
        "File upload is not available on this server."
    )
    await expect(page.locator("#file-chip")).to_be_hidden()
    await page.unroute("**/file/upload")

    uploaded = {"fileId": "f-123", "fileName": "notes.txt", "size": 11, "mimeType": "text/plain"}
    body = {"code": 200, "message": "success", "data": uploaded}
    await page.route("**/file/upload", lambda route: route.fulfill(json=body))
    async with page.expect_request("**/file/upload") as upload:
        await page.locator("#file-input").set_input_files(files=[notes])
    assert 'name="file"; filename="notes.txt"' in ((await upload.value).post_data or "")
    await expect(page.locator("#file-name")).to_have_text("notes.txt")

    async with page.expect_request("**/agent/file/stream") as stream:
        await ask(page, "Summarise it")
    # The question travels in a POST body, never in a URL that access logs keep.
    request = await stream.value
    assert request.method == "POST"
    assert urlsplit(request.url).query == ""
    sent = request.post_data_json
    assert isinstance(sent, dict)
    assert (sent["fileId"], sent["query"]) == ("f-123", "Summarise it")


DROP = """([kind, target, name, type]) => {
  const files = new DataTransfer();
  files.items.add(new File(['Some notes.'], name, { type }));
  const init = { bubbles: true, cancelable: true };
  const event = kind === 'drop'
    ? new DragEvent('drop', { ...init, dataTransfer: files })
    : new ClipboardEvent('paste', { ...init, clipboardData: files });
  document.querySelector(target).dispatchEvent(event);
  return event.defaultPrevented;
}"""


async def test_a_file_dropped_on_the_page_or_a_picture_pasted_is_attached(
    page: Page, app_url: str
) -> None:
    uploaded = {"fileId": "f-123", "fileName": "notes.txt", "size": 11, "mimeType": "text/plain"}
    body = {"code": 200, "message": "success", "data": uploaded}
    await page.route("**/file/upload", lambda route: route.fulfill(json=body))
    await page.goto(app_url)
    await expect(page.locator('#agent option[value="deep"]')).to_have_count(1)
    await page.locator("#agent").select_option("deep")
    taken = await page.evaluate(DROP, ["drop", "#messages", "notes.txt", "text/plain"])
    notice = page.locator("#notice-text")
    await expect(notice).to_contain_text("This agent does not read files: pick one that does (")
    await expect(notice).to_contain_text("Ask a file")
    await expect(page.locator("#file-chip")).to_be_hidden()

    await page.locator("#agent").select_option("file")
    async with page.expect_request("**/file/upload") as dropped:
        await page.evaluate(DROP, ["drop", "#messages", "notes.txt", "text/plain"])
    await expect(page.locator("#file-name")).to_have_text("notes.txt")

    async with page.expect_request("**/file/upload") as pasted:
        await page.evaluate(DROP, ["paste", "#question", "image.png", "image/png"])

    # The page is not replaced by the file, as a browser does with a drop nobody takes.
    assert taken is True
    assert 'filename="notes.txt"' in ((await dropped.value).post_data or "")
    assert 'filename="image.png"' in ((await pasted.value).post_data or "")


async def test_phone_screen_has_a_drawer_and_no_sideways_scroll(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("A short answer with a `long_identifier_" + "x" * 80 + "`."))
    await page.set_viewport_size(PHONE)
    await page.goto(app_url)
    sidebar = page.locator("#sidebar")
    await expect(sidebar).not_to_be_in_viewport()

    turn = await ask(page, "Something short")
    await expect(turn).to_have_attribute("data-status", "completed")
    await assert_fits_width(page, PHONE["width"])
    await expect(page.locator(".conversations .open")).to_have_count(1)

    menu = page.locator("#menu-button")
    await menu.click()
    await expect(menu).to_have_attribute("aria-expanded", "true")
    await expect(sidebar).to_be_in_viewport()
    await expect(page.locator(".conversations .open").first).to_be_focused()
    await page.keyboard.press("Escape")
    await expect(sidebar).not_to_be_in_viewport()
    await expect(menu).to_be_focused()

    await page.locator("#new-chat").click()
    await expect(page.locator(".turn")).to_have_count(0)
    await menu.click()
    await page.locator(".conversations .open").first.click()
    await expect(sidebar).not_to_be_in_viewport()
    await expect(page.locator(".turn .answer")).to_contain_text("A short answer")
    await page.screenshot(path=artifact("chat-page-phone-history.png"))


async def test_agent_picker_offers_only_the_agents_the_server_runs(
    page: Page, app_url: str
) -> None:
    async with page.expect_response("**/agent/kinds") as answered:
        await page.goto(app_url)
    kinds = (await (await answered.value).json())["data"]

    running = [k["name"] for k in kinds if k["available"]]
    assert running == [
        "Web search",
        "Ask a file",
        "PowerPoint",
        "Deep research",
        "Skills",
    ]
    # With no remote agents configured, "Remote agents" is not offered.
    assert "Remote agents" not in running
    await expect(page.locator("#agent option")).to_have_text(running)


async def test_agent_picker_follows_the_server_list_and_falls_back_when_it_fails(
    page: Page, app_url: str
) -> None:
    kinds = [
        {"kind": "chat", "name": "Web search", "available": True,
         "needsFile": False, "acceptsFile": False},
        {"kind": "skills", "name": "Skills", "available": True,
         "needsFile": False, "acceptsFile": True},
        {"kind": "deep", "name": "Deep research", "available": False,
         "needsFile": False, "acceptsFile": False},
    ]  # fmt: skip
    body = {"code": 200, "message": "success", "data": kinds}
    await page.route("**/agent/kinds", lambda route: route.fulfill(json=body))
    await page.goto(app_url)

    await expect(page.locator("#agent option")).to_have_text(["Web search", "Skills"])
    await page.locator("#agent").select_option("skills")
    await expect(page.locator("#attach")).to_be_visible()

    await page.unroute("**/agent/kinds")
    await page.route("**/agent/kinds", lambda route: route.fulfill(status=500, body="down"))
    await page.reload()

    await expect(page.locator("#agent option")).to_have_text(["Web search", "Ask a file"])
