"""What a first-time user meets on the chat page: the first screen, the conversation
list by keyboard, and files the agents cannot read or can cite."""

from __future__ import annotations

import io
from collections.abc import Callable

import httpx
from PIL import Image
from playwright.async_api import FilePayload, Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import DESKTOP, LOOP, PHONE, Upstreams, artifact
from tests.e2e.test_chat_page import ask, assert_fits_width
from tests.fakes.scripted_server import Reply
from tests.support.server import serve

pytestmark = LOOP


async def test_each_agent_explains_itself_with_examples_to_pick(page: Page, app_url: str) -> None:
    await page.goto(app_url)
    examples = page.locator("#examples .example")
    await expect(examples).to_have_count(3)
    await expect(page.locator("#question")).to_have_attribute(
        "placeholder", "Ask anything: the agent searches the web and cites its sources…"
    )
    await page.locator("#agent").select_option("pptx")
    await expect(page.locator("#welcome-text")).to_have_text(
        "Builds a PowerPoint deck on a topic, in its own designs or on your template (attach a"
        " .pptx): you see the slides, then download it."
    )
    await expect(page.locator("#question")).to_have_attribute(
        "placeholder", "Describe the deck: its topic, audience and number of slides…"
    )
    first = await examples.first.text_content()
    assert first == "A 6-slide deck on heat pumps for a town council."
    await page.set_viewport_size(PHONE)
    await expect(page.locator("#sidebar")).not_to_be_in_viewport()
    await assert_fits_width(page, PHONE["width"])
    await page.screenshot(path=artifact("chat-page-welcome-phone.png"))
    await page.set_viewport_size(DESKTOP)

    await examples.first.click()

    await expect(page.locator("#question")).to_have_value(first)
    await expect(page.locator("#question")).to_be_focused()


async def test_the_list_is_one_tab_stop_with_full_titles_and_the_open_one_in_view(
    page: Page, app_url: str
) -> None:
    titles = [
        f"Conversation number {n:02d} about the history of European railways" for n in range(22)
    ]
    async with httpx.AsyncClient(base_url=app_url) as client:
        for n, title in enumerate(titles):
            params = {"query": title, "conversationId": f"rail-{n:02d}"}
            async with client.stream("GET", "/agent/chat/stream", params=params) as response:
                await response.aread()
    await page.set_viewport_size({"width": 1280, "height": 600})
    # The oldest conversation shown: last in the list, below the fold until scrolled to.
    await page.goto(f"{app_url}/#c=rail-02")
    await expect(page.locator(".turn .question")).to_have_text(titles[2])
    current = page.locator(".conversations .open[aria-current=true]")
    await expect(current).to_be_in_viewport()

    # The title spans the sidebar, not a third less of it.
    widths = await page.evaluate(
        "[document.querySelector('.conversations li:not(:hover) .title').clientWidth,"
        " document.querySelector('#conversations').clientWidth]"
    )
    assert widths[0] >= widths[1] - 30, widths

    # One Tab into the list lands on the open conversation, one more leaves it.
    await page.locator("#search-input").focus()
    await page.keyboard.press("Tab")
    await expect(current).to_be_focused()
    await page.keyboard.press("ArrowUp")
    above = page.locator(".conversations .open").nth(18)
    await expect(above).to_be_focused()
    await page.keyboard.press("ArrowRight")
    menu = page.get_by_role("button", name=f"More for “{titles[3]}”")
    await expect(menu).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("button", name="Rename")).to_be_visible()
    await page.keyboard.press("Escape")
    await page.keyboard.press("ArrowLeft")
    await expect(above).to_be_focused()
    await page.keyboard.press("Tab")
    focused = await page.evaluate("document.activeElement.closest('#conversations') === null")
    assert focused, "a second Tab must leave the list"

    # A skip link, first on the page, goes straight to the question box.
    first = await page.evaluate(
        "document.querySelector('a[href], button, input, select, textarea').textContent"
    )
    assert first == "Skip to the question box"
    skip = page.get_by_role("link", name="Skip to the question box")
    await skip.focus()
    await expect(skip).to_be_in_viewport()
    await page.keyboard.press("Enter")
    await expect(page.locator("#question")).to_be_focused()
    assert page.url.endswith("#c=rail-02")


def blank_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 64), "white").save(out, format="PNG")
    return out.getvalue()


async def test_a_picture_the_agent_cannot_read_is_refused_at_upload(
    page: Page, app_url: str
) -> None:
    await page.goto(app_url)
    await page.locator("#agent").select_option("file")
    photo = FilePayload(name="holiday.png", mimeType="image/png", buffer=blank_png())

    await page.locator("#file-input").set_input_files(files=[photo])

    await expect(page.locator("#notice-text")).to_contain_text("holiday.png cannot be read:")
    await expect(page.locator("#file-chip")).to_be_hidden()
    await ask(page, "What is in the picture?")
    await expect(page.locator("#notice-text")).to_have_text(
        "Attach a file first: this agent answers questions about it."
    )
    await expect(page.locator(".follow-up")).to_have_count(0)


async def test_a_file_conversation_names_its_file_and_cites_the_passage(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.tool_calls([("search_document", {"query": "warranty"})]),
        Reply.text("The warranty lasts two years [1]."),
    )
    text = b"Setup takes ten minutes.\nThe warranty lasts two years from purchase.\n"
    # Signed in: the whole file comes with the page's key, as a plain link could not send it.
    async with serve(create_app(app_settings(api_keys="key-alice:alice"))) as url:
        await page.goto(url)
        await page.locator("#api-key").fill("key-alice")
        await page.locator("#api-key").press("Enter")
        await expect(page.locator("#auth")).to_be_hidden()
        await page.locator("#agent").select_option("file")
        manual = FilePayload(name="manual.txt", mimeType="text/plain", buffer=text)
        await page.locator("#file-input").set_input_files(files=[manual])
        await expect(page.locator("#file-name")).to_have_text("manual.txt")

        turn = await ask(page, "How long is the warranty?")
        await expect(turn).to_have_attribute("data-status", "completed")
        source = turn.locator(".references li").first
        await expect(source).to_contain_text("manual.txt")
        await expect(source).not_to_contain_text("127.0.0.1")
        await turn.locator(".answer a.citation").click()
        viewer = page.locator("dialog.viewer")
        await expect(viewer.locator(".passage")).to_contain_text("The warranty lasts two years")
        link = viewer.get_by_role("link", name="Download the file")
        assert "#line=" in (await link.get_attribute("href") or "")
        async with page.expect_download() as downloading:
            await link.click()
        saved = await (await downloading.value).path()
        assert saved.read_bytes() == text
        await page.keyboard.press("Escape")

        await page.reload()
        await expect(page.locator("#file-name")).to_have_text("manual.txt")
        await expect(page.locator(".turn .references li").first).to_contain_text("manual.txt")
