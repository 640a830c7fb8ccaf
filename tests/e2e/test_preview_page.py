"""Document previews on the chat page: the first page beside the turn, a viewer of the pages."""

from __future__ import annotations

from playwright.async_api import FilePayload, Page, expect

from tests.e2e.conftest import LOOP, Upstreams, artifact
from tests.e2e.test_chat_page import ask
from tests.fakes.scripted_server import Reply
from tests.support.documents import pdf_bytes

pytestmark = LOOP

PAGE_WIDTH = 1000


async def test_an_uploaded_pdf_shows_its_first_page_and_opens_its_pages(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Seven years, on page two."), Reply.text("Yearly."))
    manual = FilePayload(
        name="manual.pdf",
        mimeType="application/pdf",
        buffer=pdf_bytes(["Pump manual", "The warranty lasts seven years.", "Service"]),
    )
    await page.goto(app_url)
    await page.locator("#agent").select_option("file")
    await page.locator("#file-input").set_input_files(files=[manual])
    await expect(page.locator("#file-name")).to_have_text("manual.pdf")

    turn = await ask(page, "How long is the warranty?")
    thumbnail = turn.get_by_role("button", name="Preview manual.pdf (3 pages)")
    await expect(thumbnail).to_be_visible()
    await expect(thumbnail.locator("img")).to_have_js_property("naturalWidth", PAGE_WIDTH)
    await expect(turn).to_have_attribute("data-status", "completed")

    await thumbnail.click()
    viewer = page.get_by_role("dialog", name="manual.pdf")
    await expect(viewer).to_be_visible()
    await expect(viewer.locator(".page-position")).to_have_text("Page 1 of 3")
    await expect(viewer.get_by_role("button", name="Previous page")).to_be_disabled()
    await viewer.get_by_role("button", name="Next page").click()
    await expect(viewer.locator(".page-position")).to_have_text("Page 2 of 3")
    image = viewer.get_by_role("img", name="manual.pdf, page 2")
    await expect(image).to_have_attribute("data-page", "2")
    await expect(image).to_have_js_property("naturalWidth", PAGE_WIDTH)
    await page.screenshot(path=artifact("chat-page-preview.png"))
    await page.keyboard.press("ArrowRight")
    await expect(viewer.locator(".page-position")).to_have_text("Page 3 of 3")
    await expect(viewer.get_by_role("button", name="Next page")).to_be_disabled()

    await page.keyboard.press("Escape")
    await expect(viewer).to_be_hidden()

    # A next question on the same document does not show it again.
    second = await ask(page, "How often is it serviced?")
    await expect(second).to_have_attribute("data-status", "completed")
    previews = page.get_by_role("button", name="Preview manual.pdf (3 pages)")
    await expect(previews).to_have_count(1)

    # The history draws it again, at the first turn that asked about it.
    await page.reload()
    await expect(page.locator(".turn")).to_have_count(2)
    first = page.locator(".turn").first
    await expect(first.get_by_role("button", name="Preview manual.pdf (3 pages)")).to_be_visible()
    await expect(previews).to_have_count(1)
