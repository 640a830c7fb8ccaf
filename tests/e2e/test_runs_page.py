"""The chat page with more than one tab: running badges, rejoining, two tabs in step."""

from __future__ import annotations

import asyncio

from playwright.async_api import Page, expect

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
