"""A deck's slide opened large on the chat page: the page drawn at full size, not its
thumbnail stretched, on a wide screen and on a phone."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.async_api import Page, Response, expect

from app.agents.pptx import preview
from app.config import Settings
from app.documents.previews import PAGE_WIDTH
from app.factory import create_app
from tests.conftest import require_binary
from tests.e2e.conftest import LOOP, PHONE, Upstreams, artifact
from tests.e2e.test_chat_page import ask, assert_fits_width
from tests.e2e.test_deck_page import TITLES
from tests.support.decks import DeckModel
from tests.support.server import serve

pytestmark = LOOP


async def open_large(page: Page, number: int) -> Response:
    """Open slide `number` large; the response that drew it at full size."""
    title = TITLES[number - 1]
    async with page.expect_response(f"**/file/preview/*?page={number}") as drawn:
        await page.get_by_role("button", name=f"Open slide {number}. {title} large").click()
    viewer = page.locator("dialog.viewer")
    await expect(viewer.locator("h2")).to_have_text(f"Slide {number}. {title}")
    await expect(viewer.locator("img.slide-large")).to_have_js_property("naturalWidth", PAGE_WIDTH)
    return await drawn.value


@pytest.mark.parametrize("pdf", [True, False], ids=["from its pdf", "from its pptx"])
async def test_a_slide_opened_large_is_drawn_at_full_size(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams, pdf: bool
) -> None:
    require_binary("soffice", "LibreOffice (Debian's libreoffice-impress)")
    upstreams.llm.responder = DeckModel(TITLES)
    async with serve(create_app(app_settings(pptx_pdf=pdf))) as url:
        await page.goto(url)
        await page.locator("#agent").select_option("pptx")
        turn = await ask(page, "6 friendly slides on solar power for students")
        await expect(turn).to_have_attribute("data-status", "completed", timeout=60_000)
        thumbnail = turn.locator("img.thumbnail").nth(2)
        await expect(thumbnail).to_have_js_property("naturalWidth", preview.THUMBNAIL_WIDTH)

        drawn = await open_large(page, 3)
        assert drawn.ok
        assert drawn.headers["content-type"] == "image/png"
        await page.screenshot(path=artifact("slide-large.png"))
        await page.keyboard.press("Escape")
        await expect(page.locator("dialog.viewer")).to_be_hidden()

        await page.set_viewport_size(PHONE)
        await open_large(page, 1)
        large = await page.locator("dialog.viewer img.slide-large").bounding_box()
        assert large is not None
        assert large["width"] <= PHONE["width"]
        await assert_fits_width(page, PHONE["width"])
