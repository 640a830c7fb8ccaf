"""Sharing a conversation from the page: the link is copied, a stranger with no key reads
it read-only, and once the owner stops sharing it the link shows nothing."""

from __future__ import annotations

from collections.abc import Callable

from playwright.async_api import Browser, Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, Upstreams, artifact
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_admin_page import enter_key
from tests.e2e.test_chat_page import ask
from tests.e2e.test_sign_in_page import browser_of
from tests.fakes.scripted_server import Reply
from tests.support.server import serve

pytestmark = LOOP


async def test_a_shared_link_is_read_by_a_stranger_until_the_owner_stops_sharing(
    page: Page, browser: Browser, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Paris is the **capital**."))
    settings = app_settings(api_keys="key-alice:alice", recommendations_enabled=False)
    stranger = await browser_of(browser)
    try:
        async with serve(create_app(settings)) as url:
            await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
            await enter_key(page, url, "key-alice")
            turn = await ask(page, "Capital of France?")
            await expect(turn).to_have_attribute("data-status", "completed")
            item = page.locator(".conversations li", has_text="Capital of France?")
            await item.locator(".menu-button").click()
            await item.get_by_role("button", name="Share link").click()
            notice = page.locator("#notice-text")
            await expect(notice).to_contain_text("Link copied: anyone who has it can read")
            link = await page.evaluate("navigator.clipboard.readText()")

            await stranger.goto(link)
            shared = stranger.locator(".turn")
            await expect(stranger.locator(".shared-banner h2")).to_have_text("Capital of France?")
            await expect(shared.locator(".question")).to_have_text(["Capital of France?"])
            await expect(shared.locator(".answer strong")).to_have_text("capital")
            await expect(stranger.locator("#composer")).to_be_hidden()
            await expect(stranger.locator("#sidebar")).to_be_hidden()
            await expect(stranger.locator("#auth")).to_be_hidden()
            found = await serious_violations(stranger)
            await stranger.screenshot(path=artifact("shared-page.png"))

            await item.locator(".menu-button").click()
            await item.get_by_role("button", name="Stop sharing").click()
            await expect(notice).to_have_text("Not shared any more: the link no longer opens it.")
            await stranger.reload()
            await expect(stranger.locator(".shared-banner")).to_contain_text(
                "This shared conversation is not available"
            )
            await expect(stranger.locator(".turn")).to_have_count(0)
    finally:
        await stranger.context.close()

    assert link.startswith(f"{url}/#s=")
    assert found == [], str(found)


async def test_the_menu_offers_stop_sharing_only_once_shared_and_no_stray_word(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Paris."))
    settings = app_settings(recommendations_enabled=False)
    async with serve(create_app(settings)) as url:
        await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
        await page.goto(url)
        turn = await ask(page, "Capital of France?")
        await expect(turn).to_have_attribute("data-status", "completed")
        item = page.locator(".conversations li", has_text="Capital of France?")
        menu = item.locator(".menu")
        entries = ["Rename", "Pin", "Download Markdown", "Download JSON", "Delete"]

        await item.locator(".menu-button").click()
        await expect(menu).to_be_visible()
        await expect(menu.locator("button")).to_have_text([entries[0], "Share link", *entries[1:]])
        await expect(menu).to_have_text("".join([entries[0], "Share link", *entries[1:]]))
        await menu.get_by_role("button", name="Share link").click()
        await expect(page.locator("#notice-text")).to_contain_text("Link copied")

        await item.locator(".menu-button").click()
        shared = [entries[0], "Copy share link", "Stop sharing", *entries[1:]]
        await expect(menu.locator("button")).to_have_text(shared)
        await expect(menu).to_have_text("".join(shared))
