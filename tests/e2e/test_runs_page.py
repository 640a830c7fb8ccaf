"""The chat page with more than one tab: running badges, rejoining, two tabs in step."""

from __future__ import annotations

import asyncio

from playwright.async_api import Page, Route, expect

from tests.e2e.conftest import LOOP, Upstreams
from tests.e2e.test_chat_page import ask
from tests.fakes.scripted_server import Reply

pytestmark = LOOP


async def test_a_running_conversation_has_a_badge_and_opening_it_follows_the_answer(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    gate = asyncio.Event()
    upstreams.llm.script(
        Reply.gated("First", " answer.", gate),
        Reply.text('{"questions": ["One?", "Two?", "Three?"]}'),
    )
    other = await page.context.new_page()
    await page.goto(app_url)
    turn = await ask(page, "A long question")
    await expect(turn.locator(".answer")).to_have_text("First")

    await other.goto(app_url)
    item = other.locator(".conversations .open")
    await expect(item.locator(".title")).to_have_text(["A long question"])
    await expect(item.locator(".run-badge")).to_have_text("running")
    await item.click()
    joined = other.locator(".turn").last
    await expect(joined).to_have_attribute("data-status", "running")
    await expect(joined.locator(".answer")).to_have_text("First")
    gate.set()

    for tab in (page, other):
        last = tab.locator(".turn").last
        await expect(last).to_have_attribute("data-status", "completed")
        await expect(last.locator(".answer")).to_have_text("First answer.")
        await expect(tab.locator(".conversations .run-badge")).to_have_count(0)
    await other.close()


async def test_two_tabs_on_one_conversation_stay_in_step(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    gate = asyncio.Event()
    upstreams.llm.script(
        Reply.text("Short answer."),
        Reply.text('{"questions": ["One?", "Two?", "Three?"]}'),
        Reply.gated("Second", " answer.", gate),
        Reply.text('{"questions": ["Four?", "Five?", "Six?"]}'),
    )
    await page.goto(app_url)
    first = await ask(page, "First question")
    await expect(first).to_have_attribute("data-status", "completed")
    other = await page.context.new_page()
    await other.goto(page.url)
    await expect(other.locator(".turn .answer")).to_have_text(["Short answer."])

    await ask(page, "Second question")

    # The other tab was only showing the conversation: it follows the new turn live.
    mirrored = other.locator(".turn").last
    await expect(other.locator(".turn .question")).to_have_text(
        ["First question", "Second question"]
    )
    await expect(mirrored).to_have_attribute("data-status", "running")
    await expect(mirrored.locator(".answer")).to_have_text("Second")
    gate.set()
    await expect(mirrored).to_have_attribute("data-status", "completed")
    await expect(mirrored.locator(".answer")).to_have_text("Second answer.")
    await expect(page.locator(".turn").last.locator(".answer")).to_have_text("Second answer.")
    await other.close()


async def test_a_runs_list_asked_for_while_answering_does_not_redraw_the_answer_once_done(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    """Under load CI saw the list of runs, asked for while the page read an answer and
    answered after it ended, still say "running": the page joined its own ended turn and
    drew the conversation again, under a reader rating the answer."""
    gate, held, ended = asyncio.Event(), asyncio.Event(), asyncio.Event()
    upstreams.llm.script(
        Reply.gated("First", " answer.", gate),
        Reply.text('{"questions": ["One?", "Two?", "Three?"]}'),
    )
    # Armed once the question's own look is done: the page's next one is its poll.
    armed: list[bool] = []

    async def answer_running_after_the_end(route: Route) -> None:
        if armed != [True]:
            await route.continue_()
            return
        armed.append(False)
        response = await route.fetch()  # the turn is still running
        held.set()
        await ended.wait()
        await route.fulfill(response=response)

    await page.route("**/agent/runs", answer_running_after_the_end)
    await page.goto(app_url)
    turn = await ask(page, "A long question")
    await expect(turn.locator(".answer")).to_have_text("First")
    # The list's badge: the look the question made is done, the next is the poll.
    await expect(page.locator(".conversations .run-badge")).to_have_text("running")
    armed.append(True)
    try:
        await held.wait()  # the page's next look at its runs, every few seconds
        gate.set()
        await expect(turn).to_have_attribute("data-status", "completed")
        await page.evaluate("document.querySelector('.turn').dataset.drawn = 'once'")
        # The stale answer lands; the page's next look at its runs comes after it has acted.
        async with page.expect_request("**/agent/runs") as later:
            ended.set()
        await (await later.value).response()
    finally:
        gate.set()
        ended.set()
    await expect(page.locator(".turn")).to_have_count(1)
    await expect(page.locator(".turn")).to_have_attribute("data-drawn", "once")
    await expect(page.locator(".turn").last).to_have_attribute("data-status", "completed")
