"""A research report's files on the chat page: its Word document and its PDF are one
document, shown once (a picture of its first page) with both downloads."""

from __future__ import annotations

from collections.abc import Callable

import orjson
from playwright.async_api import Locator, Page, expect

from app.config import Settings
from app.factory import create_app
from tests.conftest import require_binary
from tests.e2e.conftest import LOOP, PHONE, artifact
from tests.e2e.test_chat_page import ask, assert_fits_width
from tests.e2e.test_deep_research_page import PLAN
from tests.support.research import Researcher
from tests.support.server import serve

pytestmark = LOOP

QUESTION = "How big is the heat pump market?"


async def assert_shown_once(turn: Locator) -> None:
    files = turn.locator(".files")
    await expect(files.locator("li")).to_have_count(1)
    await expect(files.locator("a.download")).to_have_text(
        [f"Download {QUESTION.rstrip('?')}.docx", f"Download {QUESTION.rstrip('?')}.pdf"]
    )
    await expect(files.locator(".page-thumbnail")).to_have_count(1)


async def test_a_reports_word_and_pdf_files_show_one_first_page(
    page: Page, app_settings: Callable[..., Settings]
) -> None:
    require_binary("soffice", "LibreOffice (Debian's libreoffice-writer)")
    researcher = Researcher(orjson.dumps(PLAN).decode())
    settings = app_settings(recommendations_enabled=False, deep_report_formats="docx,pdf")
    async with serve(create_app(settings, model=researcher.model())) as url:
        await page.set_viewport_size(PHONE)
        await page.goto(url)
        await page.locator("#agent").select_option("deep")
        turn = await ask(page, QUESTION)
        await expect(turn).to_have_attribute("data-status", "completed", timeout=60_000)
        await assert_shown_once(turn)
        await assert_fits_width(page, PHONE["width"])
        await turn.locator(".files").scroll_into_view_if_needed()
        await page.screenshot(path=artifact("report-files.png"))

        await page.reload()
        await assert_shown_once(page.locator(".turn").last)
