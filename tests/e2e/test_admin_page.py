"""The admin screen: an admin sees every user's running turns, stops one, reads what each
user spent and sets a user's limits, all from the page; anyone else never sees it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from playwright.async_api import Browser, Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, Upstreams, artifact
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_chat_page import ask
from tests.e2e.test_sign_in_page import api, browser_of
from tests.fakes.scripted_server import Reply
from tests.support.server import serve

pytestmark = LOOP


async def enter_key(page: Page, url: str, key: str) -> None:
    await page.goto(url)
    await page.locator("#api-key").fill(key)
    await page.locator("#api-key").press("Enter")
    await expect(page.locator("#auth")).to_be_hidden()


async def test_an_admin_stops_a_users_turn_reads_usage_and_sets_limits(
    page: Page, browser: Browser, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    gate = asyncio.Event()
    upstreams.llm.script(Reply.gated("Alice's", " answer.", gate))
    settings = app_settings(
        api_keys="key-alice:alice,key-root:root",
        admin_users="root",
        recommendations_enabled=False,
    )
    root = await browser_of(browser)
    try:
        async with serve(create_app(settings)) as url:
            await enter_key(page, url, "key-alice")
            alice_turn = await ask(page, "Alice's long question")
            await expect(alice_turn.locator(".answer")).to_have_text("Alice's")
            # The page has asked who she is (it loads before a question can be sent).
            await expect(page.locator("#admin-button")).to_be_hidden()

            await enter_key(root, url, "key-root")
            await root.locator("#admin-button").click()
            await expect(root.locator("#admin")).to_be_visible()
            await expect(root.locator("#messages")).to_be_hidden()
            await expect(root.locator("#composer")).to_be_hidden()
            run = root.locator("#admin-runs tbody tr")
            await expect(run).to_have_count(1)
            for column, text in ((0, "alice"), (1, "Web search"), (2, "Alice's long question")):
                await expect(run.locator("td").nth(column)).to_have_text(text)
            await expect(run.locator("td").nth(4)).to_have_text("running")
            found = await serious_violations(root)
            await root.screenshot(path=artifact("admin-page.png"))

            stop = run.get_by_role("button", name="Stop alice's turn")
            await stop.click()
            await expect(stop).to_have_text("Stop it?")
            await stop.click()
            await expect(root.locator("#admin-runs-empty")).to_be_visible()
            await expect(alice_turn).to_have_attribute("data-status", "stopped")
            await alice_turn.get_by_role("button", name="Bad answer").click()
            comment = alice_turn.get_by_label("What was wrong with this answer? (optional)")
            await comment.fill("Cut short.")
            await comment.press("Enter")
            await expect(comment).to_be_hidden()

            # A period chosen again reads the usage and the ratings again: alice's one turn,
            # now stored, and what she said of it.
            await root.locator("#admin-period").select_option("7")
            spent = root.locator("#admin-usage tbody tr")
            await expect(spent).to_have_count(1)
            await expect(spent.locator("td").nth(0)).to_have_text("alice")
            await expect(spent.locator("td").nth(1)).to_have_text("1")
            rated = root.locator("#admin-ratings tbody tr td")
            await expect(rated).to_have_text(
                [
                    "alice",
                    "Alice's long question",
                    "Alice's",
                    "Bad",
                    "Cut short.",
                    re.compile("."),
                ]
            )

            await spent.get_by_role("button", name="alice's limits").click()
            at_once = root.get_by_label("Streams at once")
            await expect(at_once).to_be_focused()
            await expect(at_once).to_have_value("")
            await at_once.fill("2")
            await root.get_by_label("Uploads a minute").fill("0")
            await root.locator("#admin-limits-save").click()
            await expect(root.locator("#admin-limits-status")).to_have_text("Saved alice's limits.")
            limits = await api(root, "/admin/users/alice/limits")

            await root.get_by_role("button", name="Back to chat").click()
            await expect(root.locator("#admin")).to_be_hidden()
            await expect(root.locator("#messages")).to_be_visible()
    finally:
        gate.set()
        await root.context.close()

    assert found == [], str(found)
    assert limits["overridden"] == {
        "maxStreamsPerUser": 2,
        "streamsPerMinute": None,
        "uploadsPerMinute": 0,
    }
    assert limits["limits"]["maxStreamsPerUser"] == 2
