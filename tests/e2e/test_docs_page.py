"""The OpenAPI page works on a network without internet: nothing is fetched from another host."""

from __future__ import annotations

from urllib.parse import urlsplit

from playwright.async_api import Page, Route, expect

from tests.e2e.conftest import LOOP

pytestmark = LOOP


async def offline(page: Page, app_url: str) -> list[str]:
    """Abort every request that leaves the app's origin; the list of those it aborted."""
    origin = urlsplit(app_url).netloc
    blocked: list[str] = []

    async def only_the_app(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).netloc == origin or url.startswith("data:"):
            await route.continue_()
        else:
            blocked.append(url)
            await route.abort()

    await page.route("**/*", only_the_app)
    return blocked


async def test_docs_list_the_endpoints_with_outside_requests_blocked(
    page: Page, app_url: str
) -> None:
    blocked = await offline(page, app_url)

    await page.goto(f"{app_url}/docs")

    stream = page.locator('.opblock-summary-path[data-path="/agent/chat/stream"]')
    await expect(stream.first).to_be_visible()
    await expect(
        page.locator('.opblock-summary-path[data-path="/agent/stop"]').first
    ).to_be_visible()
    # Whatever the page fetches late (images, a validator badge) has been asked for by now.
    await page.wait_for_load_state("networkidle")
    assert blocked == []
