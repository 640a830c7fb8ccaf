"""Deep research on the chat page: a question asked back, the reply, the plan as a checklist."""

from __future__ import annotations

from collections.abc import Callable

import orjson
from playwright.async_api import Locator, Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, artifact
from tests.e2e.test_chat_page import ask
from tests.support.research import REPORT, Researcher
from tests.support.server import serve

pytestmark = LOOP

PLAN = {"tasks": [{"id": "a", "title": "Market size"}, {"id": "b", "title": "Running costs"}]}


async def assert_progress_shown_once(turn: Locator) -> None:
    """The checklist alone tells the progress: each task's tool calls inside its row, no
    flat list of them beside it, no log of the same steps, and no wrapper tags."""
    tasks = turn.locator(".plan .task")
    for task in await tasks.all():
        await expect(task.locator(".tool")).not_to_have_count(0)
    await expect(turn.locator(".reply > .tools")).to_be_hidden()
    await expect(turn.locator(".thinking")).to_be_hidden()
    await tasks.first.locator("details").first.evaluate("details => { details.open = true; }")
    call = tasks.first.locator(".tool").first
    await call.locator(".tool-name").click()
    await expect(call.locator(".tool-result")).to_be_visible()
    await expect(call.locator(".tool-result")).not_to_contain_text("untrusted-content")
    # The raw arguments are one step further in.
    await expect(call.locator(".tool-args")).to_be_hidden()
    await call.locator(".tool-arguments summary").click()
    await expect(call.locator(".tool-args")).to_contain_text('"query"')


async def test_pause_reply_and_the_plan_drawn_as_a_checklist_live_and_after_reload(
    page: Page, app_settings: Callable[..., Settings]
) -> None:
    researcher = Researcher(orjson.dumps(PLAN).decode(), clarify="Which **region**?")
    app = create_app(app_settings(recommendations_enabled=False), model=researcher.model())
    async with serve(app) as url:
        await page.goto(url)
        await page.locator("#agent").select_option("deep")

        asked = await ask(page, "How big is the heat pump market?")
        await expect(asked).to_have_attribute("data-status", "paused")
        await expect(asked.locator(".answer")).to_have_text("Which region?")
        await expect(asked.locator(".status")).to_have_text("Waiting for your reply")
        await expect(page.locator("#question")).to_be_focused()

        await page.keyboard.type("Europe, since 2020")
        await page.keyboard.press("Enter")
        turn = page.locator(".turn").last
        await expect(turn).to_have_attribute("data-status", "completed")
        tasks = turn.locator(".plan .task")
        await expect(tasks).to_have_count(2)
        await expect(tasks.locator(".task-title")).to_have_text(["Market size", "Running costs"])
        await expect(tasks.locator(".task-state")).to_have_text(["done", "done"])
        await expect(turn.locator(".plan .critique")).to_have_text("Checked: enough to report.")
        await expect(turn.locator(".answer")).to_have_text(REPORT)
        # A task's findings and sources open on demand.
        await expect(tasks.first.locator(".task-summary")).to_be_hidden()
        await tasks.first.locator(".task-title").click()
        await expect(tasks.first.locator(".task-summary")).to_have_text("Findings on Market size.")
        await expect(tasks.first.locator(".task-sources a")).to_have_count(2)
        await assert_progress_shown_once(turn)
        await page.screenshot(path=artifact("deep-research.png"), full_page=True)

        await page.reload()
        stored = page.locator(".turn").last
        await expect(stored.locator(".plan .task-state")).to_have_text(["done", "done"])
        await expect(stored.locator(".plan .critique")).to_have_text("Checked: enough to report.")
        await assert_progress_shown_once(stored)
