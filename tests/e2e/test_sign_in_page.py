"""The chat page signing users in through an OpenID Connect provider (the local fake).

Each user has their own browser: they sign in with the authorization-code
flow and PKCE (the provider checks the verifier), see only their own
conversations, and an admin sees both users' runs and stops one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import DESKTOP, LOOP, PHONE, WAIT_MS, Upstreams
from tests.e2e.test_chat_page import ask, assert_fits_width
from tests.fakes.oidc_server import FakeIdentityProvider
from tests.fakes.scripted_server import Reply
from tests.support.server import serve

pytestmark = LOOP


@pytest_asyncio.fixture(loop_scope="package")
async def idp() -> AsyncIterator[FakeIdentityProvider]:
    async with FakeIdentityProvider(audience="dodo", client_id="dodo").running() as provider:
        yield provider


@pytest_asyncio.fixture(loop_scope="package")
async def signed_in_app(
    app_settings: Callable[..., Settings], idp: FakeIdentityProvider
) -> AsyncIterator[str]:
    settings = app_settings(
        oidc_issuer=idp.issuer,
        oidc_client_id="dodo",
        outbound_allowlist="127.0.0.1",
        admin_users="root",
        recommendations_enabled=False,
    )
    async with serve(create_app(settings)) as url:
        yield url


async def sign_in(page: Page, app_url: str, idp: FakeIdentityProvider, user: str) -> None:
    idp.sign_in_as = user
    await page.goto(app_url)
    await expect(page.locator("#auth-message")).to_contain_text("Sign in")
    await page.locator("#sign-in").click()
    button = page.locator("#sign-in")
    await expect(button).to_have_text("Sign out")
    await expect(button).to_have_attribute("data-user", user)


async def browser_of(browser: Browser) -> Page:
    context = await browser.new_context(viewport=DESKTOP)
    context.set_default_timeout(WAIT_MS)
    return await context.new_page()


async def api(page: Page, path: str, body: dict[str, Any] | None = None) -> Any:
    """A call made by the page's own code, with the page's own token."""
    return await page.evaluate(
        """async ([path, body]) => {
          const { getJson } = await import('/js/api.js');
          const init = body === null ? {} : {
            method: 'POST', headers: {'Content-Type': 'application/json'},
            body: JSON.stringify(body),
          };
          return await getJson(path, init);
        }""",
        [path, body],
    )


async def test_two_users_sign_in_see_only_their_own_and_an_admin_stops_one(
    page: Page,
    browser: Browser,
    signed_in_app: str,
    idp: FakeIdentityProvider,
    upstreams: Upstreams,
) -> None:
    alice_gate, bob_gate = asyncio.Event(), asyncio.Event()
    upstreams.llm.script(
        Reply.gated("Alice's", " answer.", alice_gate), Reply.gated("Bob's", " answer.", bob_gate)
    )
    bob, root = await browser_of(browser), await browser_of(browser)
    try:
        await sign_in(page, signed_in_app, idp, "alice")
        alice_turn = await ask(page, "Alice's question")
        await expect(alice_turn.locator(".answer")).to_have_text("Alice's")

        await sign_in(bob, signed_in_app, idp, "bob")
        await expect(bob.locator("#conversations-empty")).to_be_visible()
        bob_turn = await ask(bob, "Bob's question")
        await expect(bob_turn.locator(".answer")).to_have_text("Bob's")

        await sign_in(root, signed_in_app, idp, "root")
        runs = await api(root, "/admin/runs")
        alices = next(r for r in runs if r["userId"] == "alice")
        stop = {"userId": "alice", "conversationId": alices["conversationId"]}
        stopped = await api(root, "/admin/runs/stop", stop)
        await expect(alice_turn).to_have_attribute("data-status", "stopped")
        bob_gate.set()
        await expect(bob_turn).to_have_attribute("data-status", "completed")

        await page.reload()
        await expect(page.locator(".conversations .title")).to_have_text(["Alice's question"])
        await expect(bob.locator(".conversations .title")).to_have_text(["Bob's question"])
        await expect(root.locator("#conversations-empty")).to_be_visible()
    finally:
        alice_gate.set()
        bob_gate.set()
        await bob.context.close()
        await root.context.close()

    assert sorted((r["userId"], r["status"]) for r in runs) == [
        ("alice", "running"),
        ("bob", "running"),
    ]
    assert stopped["success"] is True
    # The code was traded with its PKCE verifier, once per sign-in.
    codes = [r for r in idp.token_requests if r["grant_type"] == "authorization_code"]
    assert len(codes) == 3
    assert all(len(r["code_verifier"]) >= 43 for r in codes)


async def test_the_page_refreshes_its_token_and_signs_out(
    page: Page, signed_in_app: str, idp: FakeIdentityProvider
) -> None:
    idp.token_seconds = 4
    await sign_in(page, signed_in_app, idp, "alice")
    refreshed = page.wait_for_function(
        "() => JSON.parse(sessionStorage.getItem('dodo-agent.oidc.tokens')).expiresAt"
        f" > {await page.evaluate('Date.now()')} + 4000"
    )
    await refreshed
    assert any(r["grant_type"] == "refresh_token" for r in idp.token_requests)
    assert await api(page, "/auth/me") == {"userId": "alice", "admin": False}

    await page.locator("#sign-in").click()
    await expect(page.locator("#sign-in")).to_have_text("Sign in")
    await expect(page.locator("#auth-message")).to_contain_text("Sign in")
    tokens = await page.evaluate("sessionStorage.getItem('dodo-agent.oidc.tokens')")
    assert tokens is None


async def assert_inside(page: Page, items: list[str], width: int) -> None:
    """Each of the header's `items` (their texts) shown whole, inside the screen."""
    for text in items:
        item = page.locator("#header-menu").get_by_role("button", name=text, exact=True)
        await expect(item).to_be_visible()
        box = await item.bounding_box()
        assert box is not None
        assert box["x"] >= 0, f"{text} cut off: {box}"
        assert box["x"] + box["width"] <= width, f"{text} cut off: {box}"


async def test_on_a_phone_sign_in_stands_in_the_header_and_sign_out_in_the_menu(
    page: Page, signed_in_app: str, idp: FakeIdentityProvider
) -> None:
    await page.set_viewport_size(PHONE)
    await page.goto(signed_in_app)
    await expect(page.locator("#auth-message")).to_contain_text("Sign in")
    # Signed out, Sign in is seen at once, not folded into the menu.
    await expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    await assert_fits_width(page, PHONE["width"])

    await sign_in(page, signed_in_app, idp, "root")
    await expect(page.get_by_role("button", name="Sign out")).to_be_hidden()
    await page.get_by_role("button", name="Menu", exact=True).click()
    await assert_inside(page, ["Admin", "Account", "Sign out"], PHONE["width"])
    await assert_fits_width(page, PHONE["width"])
