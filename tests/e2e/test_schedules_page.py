"""The Schedules screen: a schedule made from an answer's "Run this every…", refused with the
server's reason, run now (its run linked to its conversation), paused, resumed, edited and
deleted, all from the page; the screen passes axe. Made from an answer in a project, it is
in that project, and its runs follow the project's instructions."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.async_api import Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, Upstreams, artifact
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_chat_page import ask
from tests.fakes.scripted_server import Reply
from tests.support.polling import eventually
from tests.support.server import serve

pytestmark = LOOP

QUESTION = "What changed in the Python release notes?"


async def test_a_schedule_made_from_an_answer_runs_now_pauses_changes_and_goes(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.text("Python 3.13 is out."),
        Reply.text("Nothing new since yesterday."),
    )
    async with serve(create_app(app_settings(recommendations_enabled=False))) as url:
        await page.goto(url)
        await make_run_change_and_delete(page)


async def make_run_change_and_delete(page: Page) -> None:
    turn = await ask(page, QUESTION)
    await expect(turn.locator(".answer")).to_have_text("Python 3.13 is out.")

    await turn.get_by_role("button", name="Run this every…").click()
    screen = page.locator("#schedules")
    await expect(screen).to_be_visible()
    await expect(page.locator("#messages")).to_be_hidden()
    await expect(page.locator("#schedule-query")).to_have_value(QUESTION)
    await expect(page.locator("#schedule-kind")).to_have_value("chat")

    await page.locator("#schedule-repeat").select_option("rrule")
    await page.locator("#schedule-custom").fill("FREQ=MINUTELY;INTERVAL=5")
    await page.get_by_role("button", name="Save").click()
    await expect(page.locator("#schedule-status")).to_contain_text(
        "the shortest interval allowed is 15 min"
    )
    await expect(page.locator("#schedules-list")).to_be_hidden()

    await page.locator("#schedule-name").fill("Release notes")
    await page.locator("#schedule-repeat").select_option("weekdays")
    await page.locator("#schedule-time").fill("07:30")
    await page.locator("#schedule-zone").fill("Europe/Paris")
    await page.get_by_role("button", name="Save").click()
    row = page.locator("#schedules-list tbody tr")
    await expect(row).to_have_count(1)
    await expect(row.locator("td").nth(0)).to_have_text("Release notes")
    await expect(row.locator("td").nth(2)).to_have_text("Every weekday at 07:30 (Europe/Paris)")
    await expect(page.locator("#schedule-status")).to_contain_text("Saved “Release notes”")
    assert await serious_violations(page) == []
    await page.screenshot(path=artifact("schedules-screen.png"))

    await row.get_by_role("button", name="Run now “Release notes”").click()
    run = page.locator("#schedule-runs tbody tr")
    await expect(run).to_have_count(1)
    await expect(run.locator("td").nth(1)).to_have_text("Run now")
    await expect(run.locator("td").nth(2)).to_have_text(re.compile("^(running|completed)$"))

    await row.get_by_role("button", name="Pause “Release notes”").click()
    await expect(row.locator("td").nth(3)).to_have_text("Paused")
    await row.get_by_role("button", name="Resume “Release notes”").click()
    await expect(row.locator("td").nth(3)).not_to_have_text("Paused")

    await row.get_by_role("button", name="Edit “Release notes”").click()
    await expect(page.locator("#schedule-repeat")).to_have_value("weekdays")
    await expect(page.locator("#schedule-time")).to_have_value("07:30")
    await page.locator("#schedule-name").fill("Morning notes")
    await page.locator("#schedule-repeat").select_option("daily")
    await page.get_by_role("button", name="Save").click()
    await expect(row.locator("td").nth(0)).to_have_text("Morning notes")
    await expect(row.locator("td").nth(2)).to_have_text("Every day at 07:30 (Europe/Paris)")

    await run.get_by_role("link", name="Open").click()
    await expect(screen).to_be_hidden()
    opened = page.locator(".turn").last
    await expect(opened.locator(".question")).to_have_text(QUESTION)
    await expect(opened.locator(".answer")).to_have_text("Nothing new since yesterday.")

    await page.locator("#schedules-button").click()
    await expect(row.locator("td").nth(4)).to_have_text(re.compile("^completed, "))
    delete = row.get_by_role("button", name="Delete “Morning notes”")
    await delete.click()
    await row.get_by_role("button", name="Delete it? Delete “Morning notes”").click()
    await expect(page.locator("#schedules-list-empty")).to_be_visible()
    await expect(page.locator("#schedules-list")).to_be_hidden()


async def test_run_this_every_in_a_project_makes_a_schedule_that_runs_in_it(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    pirate = "Always answer like a pirate."
    upstreams.llm.script(Reply.text("Arr, the shed."), Reply.text("Arr, still the shed."))
    async with serve(create_app(app_settings(recommendations_enabled=False))) as url:
        made = await page.request.post(
            f"{url}/projects", data={"name": "Flat", "instructions": pirate}
        )
        project_id = (await made.json())["data"]["projectId"]
        await page.goto(url)
        await page.locator("#projects .open-project").click()
        await page.get_by_role("button", name="New chat in this project").click()
        turn = await ask(page, "Where do bikes go?")
        await expect(turn).to_have_attribute("data-status", "completed")

        await turn.get_by_role("button", name="Run this every…").click()
        await expect(page.locator("#schedule-project")).to_have_value(project_id)
        await expect(page.locator("#schedule-project option:checked")).to_have_text("Flat")
        await page.get_by_role("button", name="Save").click()
        row = page.locator("#schedules-list tbody tr")
        await expect(row).to_have_count(1)
        await row.get_by_role("button", name="Run now “Where do bikes go?”").click()

        async def asked_twice() -> bool:
            return len(upstreams.llm.requests) == 2

        await eventually(asked_twice, what="the run's question sent to the model")
        listed = await (await page.request.get(f"{url}/schedules")).json()

    assert [s["projectId"] for s in listed["data"]] == [project_id]
    assert pirate in upstreams.llm.system_text(upstreams.llm.requests[-1])
