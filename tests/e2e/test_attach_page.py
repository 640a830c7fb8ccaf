"""Attaching a file on the chat page: a question sent while its file is still on its way
waits for it, and the PowerPoint agent takes a .pptx as the template of its deck (and says
so), on a desktop and on a phone."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Callable

from playwright.async_api import Error, FilePayload, Page, Request, Route, ViewportSize, expect
from pptx import Presentation
from pptx.opc.constants import RELATIONSHIP_TYPE as RT

from app.config import Settings
from app.documents import office
from app.factory import create_app
from tests.e2e.conftest import LOOP, PHONE, WAIT_MS, Upstreams, artifact
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_chat_page import DROP, assert_fits_width
from tests.e2e.test_deck_page import TITLES
from tests.fakes.scripted_server import Reply
from tests.integration.test_pptx_own_template import BARE
from tests.support.decks import DeckModel
from tests.support.pptx_templates import LOGO, THEME_NAME, company_template
from tests.support.server import serve

pytestmark = LOOP

WIDE = ViewportSize(width=1366, height=900)
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
NOTES = FilePayload(name="notes.txt", mimeType="text/plain", buffer=b"The pump is serviced yearly.")
TEMPLATE_EXAMPLE = "A 6-slide quarterly update for the board, on my own template."
QUESTION = "6 friendly slides on solar power for students, on my own template."


async def test_send_while_the_file_uploads_waits_for_it_says_so_and_then_sends(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("Yearly, say the notes."))
    held: list[Route] = []
    arrived = asyncio.Event()

    async def hold(route: Route) -> None:
        """The upload waits here until the test lets it through."""
        held.append(route)
        arrived.set()

    async with serve(create_app(app_settings(recommendations_enabled=False))) as url:
        try:
            await page.set_viewport_size(WIDE)
            await page.route("**/file/upload", hold)
            await page.goto(url)
            await page.locator("#agent").select_option("file")
            await page.locator("#file-input").set_input_files(files=[NOTES])
            await asyncio.wait_for(arrived.wait(), WAIT_MS / 1000)
            await expect(page.locator("#file-name")).to_have_text("Uploading notes.txt…")

            await page.locator("#question").fill("How often is the pump serviced?")
            await page.locator("#question").press("Enter")

            hint = page.locator("#composer-hint")
            await expect(hint).to_have_text(
                "Waiting for notes.txt… the question is sent once it is read."
            )
            await expect(page.locator("#send")).to_be_disabled()
            await expect(page.locator("#notice")).to_be_hidden()
            await expect(page.locator(".turn")).to_have_count(0)
            await page.screenshot(path=artifact("attach-waiting.png"))
            async with page.expect_request("**/agent/file/stream") as streamed:
                await held[0].continue_()
            sent = (await streamed.value).post_data_json

            turn = page.locator(".turn").last
            await expect(turn).to_have_attribute("data-status", "completed")
            await expect(turn.locator(".answer")).to_have_text("Yearly, say the notes.")
            await expect(hint).to_be_hidden()
            await expect(page.locator("#question")).to_have_value("")
            await expect(page.locator("#file-name")).to_have_text("notes.txt")
            await expect(page.locator("#notice")).to_be_hidden()
        finally:
            # Let a held upload go, so a failure above leaves nothing waiting on it.
            for route in held:
                with contextlib.suppress(Error):
                    await route.continue_()

    assert isinstance(sent, dict)
    assert sent["query"] == "How often is the pump serviced?"
    assert sent["fileId"]
    assert "The pump is serviced yearly." in str(upstreams.llm.requests[-1]["messages"])


async def test_a_deck_is_built_on_the_template_the_welcome_example_asks_for(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.responder = DeckModel(TITLES, own_template=True)
    streams: list[Request] = []
    page.on("request", lambda r: streams.append(r) if "/agent/pptx/stream" in r.url else None)
    await page.set_viewport_size(WIDE)
    await page.goto(app_url)
    await page.locator("#agent").select_option("pptx")
    attach = page.locator("#attach-button")
    await expect(attach).to_have_text("Attach template")
    await expect(attach).to_have_attribute(
        "title", "A .pptx of yours: the deck is built on its masters, layouts and theme."
    )
    await expect(page.locator("#welcome-text")).to_contain_text("on your template (attach a .pptx)")
    found = await serious_violations(page)

    example = page.get_by_role("button", name=TEMPLATE_EXAMPLE)
    async with page.expect_file_chooser() as choosing:
        await example.click()
    await expect(page.locator("#question")).to_have_value(TEMPLATE_EXAMPLE)
    chooser = await choosing.value
    template = FilePayload(name="Acme brand.pptx", mimeType=PPTX, buffer=company_template())
    await chooser.set_files(files=[template])
    await expect(page.locator("#file-name")).to_have_text("Template: Acme brand.pptx")
    # The example is a start: the reader makes it theirs (the fake model writes of solar power).
    await page.locator("#question").fill(QUESTION)
    await page.locator("#question").press("Enter")

    turn = page.locator(".turn").last
    await expect(turn).to_have_attribute("data-status", "completed", timeout=60_000)
    await expect(turn.locator(".deck-facts")).to_contain_text("Acme brand")
    if office.available():
        await expect(turn.locator(".deck img.thumbnail")).to_have_count(len(TITLES))
        for image in await turn.locator(".deck img.thumbnail").all():
            await expect(image).not_to_have_js_property("naturalWidth", 0)
    # The picture in docs/use/decks.md: the question, the deck on its template, the chip.
    await page.emulate_media(color_scheme="light")
    await turn.evaluate("turn => turn.scrollIntoView({block: 'start'})")
    await page.screenshot(path=artifact("page-deck-template.png"))
    async with page.expect_download() as downloading:
        await turn.locator(".deck-download a.download").first.click()
    deck = Presentation(io.BytesIO((await (await downloading.value).path()).read_bytes()))

    [stream] = streams
    sent = stream.post_data_json
    assert isinstance(sent, dict)
    assert sent["query"] == QUESTION
    assert sent["templateFileId"]
    assert "fileId" not in sent
    [master] = deck.slide_masters
    assert LOGO in [shape.name for shape in master.shapes]
    assert f'name="{THEME_NAME}"' in master.part.part_related_by(RT.THEME).blob.decode()
    assert all(s.slide_layout.name.startswith("Acme ") for s in deck.slides)
    assert found == [], str(found)


async def test_the_powerpoint_agent_takes_only_a_pptx_as_its_template_on_a_phone(
    page: Page, app_url: str
) -> None:
    uploads: list[str] = []
    page.on("request", lambda r: uploads.append(r.url) if "/file/upload" in r.url else None)
    await page.set_viewport_size(PHONE)
    await page.goto(app_url)
    await page.locator("#agent").select_option("pptx")
    await expect(page.locator("#attach-button")).to_be_visible()
    await expect(page.get_by_role("button", name=TEMPLATE_EXAMPLE)).to_be_visible()
    await assert_fits_width(page, PHONE["width"])
    notice = page.locator("#notice-text")
    said = "The PowerPoint agent takes a .pptx as the template of its deck: notes.txt is not one."

    await page.evaluate(DROP, ["drop", "#messages", "notes.txt", "text/plain"])
    await expect(notice).to_have_text(said)
    await page.locator("#notice-close").click()
    await page.locator("#file-input").set_input_files(files=[NOTES])
    await expect(notice).to_have_text(said)
    await expect(page.locator("#file-chip")).to_be_hidden()
    await page.screenshot(path=artifact("attach-not-a-template-phone.png"))

    # Another agent reads the same file as a document.
    await page.locator("#agent").select_option("file")
    await expect(page.locator("#attach-button")).to_have_text("Attach file")
    await page.locator("#file-input").set_input_files(files=[NOTES])
    await expect(page.locator("#file-name")).to_have_text("notes.txt")
    # Not a template: the PowerPoint agent does not take it, and shows none.
    await page.locator("#agent").select_option("pptx")
    await expect(page.locator("#file-chip")).to_be_hidden()

    # A .pptx without the layouts a deck needs is refused as the question is sent, with
    # what it lacks; the question stays in the box.
    bare = FilePayload(name="bare.pptx", mimeType=PPTX, buffer=company_template(drop=BARE))
    await page.locator("#file-input").set_input_files(files=[bare])
    await expect(page.locator("#file-name")).to_have_text("Template: bare.pptx")
    await page.locator("#question").fill("5 slides on solar power")
    await page.locator("#question").press("Enter")
    await expect(notice).to_contain_text("Title and Content")
    await expect(page.locator("#question")).to_have_value("5 slides on solar power")
    await expect(page.locator(".turn")).to_have_count(0)
    await assert_fits_width(page, PHONE["width"])
    assert len(uploads) == 2
