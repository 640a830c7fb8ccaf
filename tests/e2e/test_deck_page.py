"""The PowerPoint agent on our chat page: the slide list of each version, and its download."""

from __future__ import annotations

import io

from playwright.async_api import Page, expect
from pptx import Presentation

from app.agents.pptx import preview
from tests.e2e.conftest import LOOP, Upstreams, artifact
from tests.e2e.test_chat_page import ask
from tests.support.decks import DeckModel

pytestmark = LOOP

TITLES = ["Solar power", "Agenda", "How panels work", "Light to current", "Solar or coal", "Thanks"]


async def test_a_deck_shows_its_slides_and_downloads_as_a_valid_pptx(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.responder = DeckModel(TITLES)
    await page.goto(app_url)
    await page.locator("#agent").select_option("pptx")

    turn = await ask(page, "6 friendly slides on solar power for students")

    await expect(turn).to_have_attribute("data-status", "completed")
    deck = turn.locator(".deck")
    await expect(deck.locator(".slides li")).to_have_count(len(TITLES))
    await expect(deck.locator("h3")).to_contain_text("Solar power: version 1")
    await expect(deck.locator(".slides li").nth(2)).to_contain_text("How panels work")
    if preview.available():
        await expect(deck.locator("img.thumbnail")).to_have_count(len(TITLES))
        for image in await deck.locator("img.thumbnail").all():
            await expect(image).to_have_js_property("naturalWidth", preview.THUMBNAIL_WIDTH)
    await deck.locator("h3").scroll_into_view_if_needed()
    await page.screenshot(path=artifact("chat-page-deck.png"))
    async with page.expect_download() as downloading:
        await deck.locator(".versions a", has_text="Version 1").click()
    saved = await (await downloading.value).path()

    slides = Presentation(io.BytesIO(saved.read_bytes())).slides
    titles = [
        next(s.text_frame.text for s in slide.shapes if s.name == "title") for slide in slides
    ]
    assert titles == TITLES
