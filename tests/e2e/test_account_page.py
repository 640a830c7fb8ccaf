"""Your account on the page: what your turns spent, and your own API keys made, copied,
used and revoked; on a server with no sign-in, the spending alone."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from playwright.async_api import Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, Upstreams, artifact
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_admin_page import enter_key
from tests.e2e.test_chat_page import ask
from tests.fakes.scripted_server import Reply
from tests.support.server import serve

pytestmark = LOOP


async def test_a_user_reads_their_usage_and_makes_uses_and_revokes_a_key(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Hello Alice."))
    settings = app_settings(api_keys="key-alice:alice", recommendations_enabled=False)
    async with serve(create_app(settings)) as url:
        await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
        await enter_key(page, url, "key-alice")
        turn = await ask(page, "Hi there")
        await expect(turn).to_have_attribute("data-status", "completed")

        await page.get_by_role("button", name="Account").click()
        await expect(page.locator("#account-user")).to_have_text("Signed in as alice.")
        usage = page.locator("#account-usage tbody tr")
        await expect(usage.locator("th")).to_have_text(
            ["All turns", "Agent · Web search", f"Model · {settings.llm_model}"]
        )
        await expect(usage.locator("td:nth-child(2)")).to_have_text(["1", "1", "1"])
        await expect(page.locator("#account-keys-empty")).to_be_visible()

        await page.get_by_label("Name").fill("laptop")
        await page.get_by_label("Expires").select_option("30")
        await page.get_by_role("button", name="Make a key").click()
        made = page.locator("#account-key-text")
        await expect(made).not_to_have_text("")
        await page.get_by_role("button", name="Copy the new key").click()
        copied = await page.evaluate("navigator.clipboard.readText()")
        key = await made.text_content()
        listed = page.locator("#account-keys tbody tr")
        await expect(listed.locator("td").first).to_have_text("laptop")
        found = await serious_violations(page)
        await page.screenshot(path=artifact("account-page.png"))
        async with httpx.AsyncClient(base_url=url) as client:
            me = (await client.get("/auth/me", headers={"Authorization": f"Bearer {key}"})).json()

            revoke = listed.get_by_role("button", name="Revoke laptop")
            await revoke.click()
            await expect(revoke).to_have_text("Revoke it?")
            await revoke.click()
            await expect(page.locator("#account-keys-empty")).to_be_visible()
            after = await client.get("/auth/me", headers={"Authorization": f"Bearer {key}"})

        # Shown once: closing the screen forgets it.
        await page.get_by_role("button", name="Back to chat").click()
        await expect(page.locator(".turn")).to_be_visible()
        await page.get_by_role("button", name="Account").click()
        await expect(made).to_be_hidden()

    assert found == [], str(found)
    assert copied == key
    assert me["data"] == {"userId": "alice", "admin": False}
    assert after.status_code == 401


async def test_with_no_sign_in_the_account_shows_spending_and_no_keys(
    page: Page, app_url: str
) -> None:
    await page.goto(app_url)
    await page.get_by_role("button", name="Account").click()
    await expect(page.locator("#account-usage-empty")).to_be_visible()
    await expect(page.locator("#account-keys-section")).to_be_hidden()
    await expect(page.locator("#account-user")).to_have_text("")
    await expect(page.locator("#admin-button")).to_be_hidden()
