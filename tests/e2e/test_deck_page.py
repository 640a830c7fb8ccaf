"""The PowerPoint agent on our chat page: the deck's slides, large on demand, its one
download (and its PDF, or why there is none), and the same deck when the conversation is
opened again."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.async_api import Locator, Page, Response, expect
from pptx import Presentation
from pypdf import PdfReader

from app.agents.pptx import preview
from app.config import Settings
from app.documents import office
from app.factory import create_app
from tests.conftest import require_binary
from tests.e2e.conftest import LOOP, Upstreams, artifact
from tests.e2e.test_chat_page import ask
from tests.support.decks import DeckModel
from tests.support.server import serve

pytestmark = LOOP

TITLES = ["Solar power", "Agenda", "How panels work", "Light to current", "Solar or coal", "Thanks"]


async def assert_deck_shown(page: Page, turn: Locator) -> None:
    """The slides once, each thumbnail opening large, one download, no internal names."""
    deck = turn.locator(".deck")
    await expect(deck.locator("h3")).to_have_text("Solar power")
    await expect(deck.locator(".deck-facts")).to_contain_text("Version 1")
    await expect(deck.locator(".slide-title")).to_have_text(
        [f"{n}. {title}" for n, title in enumerate(TITLES, 1)]
    )
    # The answer text repeats the slide list for the original client: not shown here.
    await expect(turn.locator(".answer")).to_be_hidden()
    await expect(turn.locator("a.download:visible")).to_have_count(1)
    await expect(turn).not_to_contain_text("image_text")
    await expect(deck).not_to_contain_text("null")  # a part the deck lacks is left out
    if not office.available():
        return
    thumbnails = deck.locator("img.thumbnail")
    await expect(thumbnails).to_have_count(len(TITLES))
    for image in await thumbnails.all():
        await expect(image).to_have_js_property("naturalWidth", preview.THUMBNAIL_WIDTH)
    box = await thumbnails.first.bounding_box()
    assert box is not None
    assert box["width"] >= 300, f"thumbnails too small: {box}"
    await deck.get_by_role("button", name="Open slide 3. How panels work large").click()
    viewer = page.locator("dialog.viewer")
    await expect(viewer).to_be_visible()
    await expect(viewer.locator("h2")).to_have_text("Slide 3. How panels work")
    large = await viewer.locator("img").bounding_box()
    assert large is not None
    assert large["width"] > 2 * box["width"]
    await page.keyboard.press("Escape")
    await expect(viewer).to_be_hidden()


async def test_a_deck_shows_its_slides_downloads_and_comes_back_on_reload(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.responder = DeckModel(TITLES)
    missing: list[str] = []

    def note(response: Response) -> None:
        if response.status == 404:
            missing.append(response.url)

    page.on("response", note)
    await page.goto(app_url)
    await page.locator("#agent").select_option("pptx")

    turn = await ask(page, "6 friendly slides on solar power for students")

    await expect(turn).to_have_attribute("data-status", "completed")
    await assert_deck_shown(page, turn)
    await turn.locator(".deck h3").scroll_into_view_if_needed()
    await page.screenshot(path=artifact("chat-page-deck.png"))
    async with page.expect_download() as downloading:
        await turn.locator("a.download:visible").click()
    saved = await (await downloading.value).path()
    slides = Presentation(io.BytesIO(saved.read_bytes())).slides
    titles = [
        next(s.text_frame.text for s in slide.shapes if s.name == "title") for slide in slides
    ]
    assert titles == TITLES

    await page.reload()
    await assert_deck_shown(page, page.locator(".turn").last)
    # No request for a URL the page made up (a slide without a thumbnail yet, say).
    assert missing == []


async def assert_pdf_offered(turn: Locator) -> None:
    """The PDF beside the deck's download, and not again in the turn's files."""
    downloads = turn.locator(".deck-download a.download")
    await expect(downloads).to_have_text(["Download Solar power v1.pptx", "PDF"])
    await expect(turn.locator("a.download:visible")).to_have_count(2)
    await expect(turn.locator(".deck")).not_to_contain_text("null")


async def test_the_decks_pdf_is_offered_beside_its_download(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    require_binary("soffice", "LibreOffice (Debian's libreoffice-impress)")
    upstreams.llm.responder = DeckModel(TITLES)
    async with serve(create_app(app_settings(pptx_pdf=True))) as url:
        await page.goto(url)
        await page.locator("#agent").select_option("pptx")
        turn = await ask(page, "6 friendly slides on solar power for students")
        await expect(turn).to_have_attribute("data-status", "completed", timeout=60_000)
        await assert_pdf_offered(turn)
        await expect(turn.locator(".deck-pdf-error")).to_have_count(0)
        await turn.locator(".deck-download").scroll_into_view_if_needed()
        await page.screenshot(path=artifact("chat-page-deck-pdf.png"))
        async with page.expect_download() as downloading:
            await turn.locator(".deck-download a.download", has_text="PDF").click()
        download = await downloading.value
        assert download.suggested_filename.endswith(".pdf")
        assert len(PdfReader(await download.path()).pages) == len(TITLES)

        await page.reload()
        await assert_pdf_offered(page.locator(".turn").last)


async def test_a_deck_without_its_pdf_says_why_once(
    page: Page,
    app_settings: Callable[..., Settings],
    upstreams: Upstreams,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nothing = tmp_path / "no-programs"
    nothing.mkdir()
    monkeypatch.setenv("PATH", str(nothing))  # no LibreOffice: the PDF cannot be made
    upstreams.llm.responder = DeckModel(TITLES)
    async with serve(create_app(app_settings(pptx_pdf=True))) as url:
        await page.goto(url)
        await page.locator("#agent").select_option("pptx")
        turn = await ask(page, "6 friendly slides on solar power for students")
        await expect(turn).to_have_attribute("data-status", "completed")
        for shown in (turn, page.locator(".turn").last):
            if shown is not turn:
                await page.reload()
            reason = shown.locator(".deck .deck-pdf-error")
            await expect(reason).to_contain_text("No PDF of the deck")
            await expect(reason).to_contain_text("LibreOffice")
            # Said once: the files list does not repeat it, and no PDF link is offered.
            await expect(shown.locator(".unmade:visible")).to_have_count(0)
            await expect(shown.locator("a.download:visible")).to_have_count(1)
            await expect(shown.locator(".deck")).not_to_contain_text("null")
        await page.screenshot(path=artifact("chat-page-deck-no-pdf.png"))


async def test_a_step_that_fails_is_named_on_the_page_and_again_on_reload(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    model = DeckModel(TITLES)
    model.answers["OUTLINE"] = ["I would rather not.", "I would rather not."]
    upstreams.llm.responder = model
    await page.goto(app_url)
    await page.locator("#agent").select_option("pptx")

    turn = await ask(page, "6 friendly slides on solar power for students")

    await expect(turn).to_have_attribute("data-status", "failed")
    sentence = (
        "Planning the deck's outline failed: the model's answer could not be used, even when"
        " asked again (The answer must be one JSON object). Say “retry” to try it again."
    )
    await expect(turn.locator(".error-text")).to_have_text(sentence)
    await page.reload()
    await expect(page.locator(".turn").last.locator(".error-text")).to_have_text(sentence)
