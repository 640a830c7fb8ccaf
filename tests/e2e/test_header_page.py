"""The page's header once signed in: on a phone the account items fold into one menu, so
nothing runs past the screen's edge; on a wide screen they stand in the header."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.async_api import Browser, ViewportSize, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, PHONE, WAIT_MS, artifact
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_admin_page import enter_key
from tests.e2e.test_chat_page import assert_fits_width
from tests.e2e.test_sign_in_page import assert_inside
from tests.support.server import serve

pytestmark = LOOP

WIDE = ViewportSize(width=1366, height=900)


@pytest.mark.parametrize(
    ("user", "items"),
    [("alice", ["Account", "API key"]), ("root", ["Admin", "Account", "API key"])],
)
async def test_a_phone_header_folds_the_account_items_into_one_menu(
    browser: Browser, app_settings: Callable[..., Settings], user: str, items: list[str]
) -> None:
    settings = app_settings(api_keys="key-alice:alice,key-root:root", admin_users="root")
    context = await browser.new_context(viewport=PHONE)
    context.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    try:
        page = await context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        async with serve(create_app(settings)) as url:
            await enter_key(page, url, f"key-{user}")
            menu = page.get_by_role("button", name="Menu", exact=True)
            await expect(menu).to_be_visible()
            await expect(menu).to_have_attribute("aria-expanded", "false")
            await expect(page.locator("#header-menu")).to_be_hidden()
            await assert_fits_width(page, PHONE["width"])

            await menu.click()
            await expect(menu).to_have_attribute("aria-expanded", "true")
            await assert_inside(page, items, PHONE["width"])
            await expect(page.locator("#header-menu button:visible").first).to_be_focused()
            await assert_fits_width(page, PHONE["width"])
            await page.screenshot(path=artifact(f"header-menu-phone-{user}.png"))
            found = await serious_violations(page)
            assert found == [], str(found)
            await page.keyboard.press("Escape")
            await expect(menu).to_have_attribute("aria-expanded", "false")
            await expect(menu).to_be_focused()

            # An item used closes the menu, and its screen takes the chat's place.
            await menu.click()
            await page.locator("#header-menu").get_by_role("button", name="Account").click()
            await expect(page.locator("#account")).to_be_visible()
            await expect(menu).to_have_attribute("aria-expanded", "false")
            await assert_fits_width(page, PHONE["width"])

            # A wide screen shows them in the header, with no menu.
            await page.set_viewport_size(WIDE)
            await expect(menu).to_be_hidden()
            await assert_inside(page, items, WIDE["width"])
    finally:
        await context.close()
    assert errors == []
