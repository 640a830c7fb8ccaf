"""A page an agent read, as the chat page shows it: a tool step with the page's title, linked."""

from __future__ import annotations

from collections.abc import Callable

from playwright.async_api import Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, Upstreams
from tests.e2e.test_chat_page import ask
from tests.fakes.page_server import FakeSite, html_page
from tests.fakes.scripted_server import Reply
from tests.support.server import serve

pytestmark = LOOP


async def test_a_read_page_shows_as_a_step_titled_and_linked_live_and_after_reload(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    async with FakeSite().running() as site:
        url = site.add(
            "/warranty",
            html_page("Pump warranty", "<h1>Warranty</h1><p>Seven years from installation.</p>"),
        )
        upstreams.llm.script(
            Reply.tool_calls([("fetch_page", {"url": url})]),
            Reply.text("Seven years, says the maker [1]."),
        )
        settings = app_settings(outbound_allowlist="127.0.0.1", recommendations_enabled=False)
        async with serve(create_app(settings)) as app_url:
            await page.goto(app_url)
            turn = await ask(page, f"What does {url} say?")
            step = turn.locator(".tool").filter(has_text="fetch_page")
            link = step.locator("a.read-page")
            await expect(link).to_have_text("Pump warranty")
            await expect(link).to_have_attribute("href", url)
            await expect(step).to_have_class("tool done")
            await expect(turn.locator(".answer")).to_contain_text("Seven years")

            await page.reload()
            again = page.locator(".turn").last.locator(".tool a.read-page")
            await expect(again).to_have_text("Pump warranty")
            await expect(again).to_have_attribute("href", url)
