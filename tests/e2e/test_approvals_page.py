"""The chat page asks before the agent acts: the pending call with Approve, Edit and Reject,
and a research plan to review as a checklist (API.md, "Asking before acting").

What runs is what the card shows: the arguments are read-only until Edit, and Approve
after a change runs the change. A rejected call shows as declined, not failed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import orjson
import pytest_asyncio
from playwright.async_api import Locator, Page, ViewportSize, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, PHONE, Upstreams, artifact
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_chat_page import ask, assert_fits_width
from tests.fakes.scripted_server import Reply
from tests.support.research import REPORT, Researcher
from tests.support.server import serve

pytestmark = LOOP

WIDE = ViewportSize(width=1366, height=900)
WRITE = ("write_file", {"path": "notes.txt", "content": "hello"})
EDIT = ("edit_file", {"path": "notes.txt", "old_string": "hello", "new_string": "goodbye"})


@pytest_asyncio.fixture(loop_scope="package")
async def asking(app_settings: Callable[..., Settings]) -> AsyncIterator[tuple[str, Settings]]:
    """The app with the file tools asking first, and its settings (where the files go)."""
    settings = app_settings(tool_approval="write_file,edit_file", recommendations_enabled=False)
    async with serve(create_app(settings)) as url:
        yield url, settings


async def choose_skills(page: Page) -> None:
    await page.locator("#agent").select_option("skills")


async def test_a_write_waits_on_the_page_and_runs_when_approved(
    page: Page, asking: tuple[str, Settings], upstreams: Upstreams
) -> None:
    url, _ = asking
    upstreams.llm.script(Reply.tool_calls([WRITE]), Reply.text("Written."))
    await page.goto(url)
    await choose_skills(page)
    turn = await ask(page, "Write my notes")
    card = turn.locator(".approval")
    await expect(card.locator("h3")).to_have_text("Run write_file?")
    await expect(turn).to_have_attribute("data-status", "paused")
    await expect(card.locator(".approval-arguments")).to_have_value(
        orjson.dumps(WRITE[1], option=orjson.OPT_INDENT_2).decode()
    )

    await card.get_by_role("button", name="Approve").click()

    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".approval")).to_have_count(0)
    await expect(turn.locator(".tool.done .tool-name")).to_have_text(["write_file"])
    await expect(turn.locator(".answer")).to_contain_text("Written.")
    await expect(turn.locator(".files")).to_contain_text("notes.txt")


async def test_an_edit_file_call_shows_its_diff_and_a_rejection_takes_the_reason(
    page: Page, asking: tuple[str, Settings], upstreams: Upstreams
) -> None:
    url, _ = asking
    upstreams.llm.script(Reply.tool_calls([EDIT]), Reply.text("I left it."))
    await page.goto(url)
    await choose_skills(page)
    turn = await ask(page, "Change my notes")
    card = turn.locator(".approval")
    await expect(card.locator(".diff-removed")).to_have_text(["- hello\n"])
    await expect(card.locator(".diff-added")).to_have_text(["+ goodbye\n"])

    await card.locator(".approval-reason").fill("keep it as it is")
    await card.get_by_role("button", name="Reject").click()

    await expect(turn).to_have_attribute("data-status", "completed")
    await assert_declined(turn)
    await expect(turn.locator(".answer")).to_have_text("I left it.")
    told = [m for m in upstreams.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert "keep it as it is" in str(told[-1]["content"])

    await page.reload()
    await assert_declined(page.locator(".turn").last)


async def assert_declined(turn: Locator) -> None:
    """The rejected call said as declined: it did not run, so it did not fail."""
    await expect(turn.locator(".tool .tool-name")).to_have_text(["edit_file"])
    await expect(turn.locator(".tool .tool-state")).to_have_text(["declined"])
    await expect(turn.locator(".tool.failed")).to_have_count(0)


async def test_the_arguments_change_only_after_edit_and_approve_runs_the_change(
    page: Page, asking: tuple[str, Settings], upstreams: Upstreams
) -> None:
    """After a reload too: what runs is what the card shows when Approve is pressed."""
    url, settings = asking
    upstreams.llm.script(Reply.tool_calls([WRITE]), Reply.text("Written as you said."))
    await page.goto(url)
    await choose_skills(page)
    turn = await ask(page, "Write my notes")
    await expect(turn).to_have_attribute("data-status", "paused")
    await page.reload()
    turn = page.locator(".turn").last
    card = turn.locator(".approval")
    box = card.locator(".approval-arguments")
    approve = card.locator(".approve")
    await expect(box).not_to_be_editable()

    await card.get_by_role("button", name="Edit").click()
    await expect(box).to_be_editable()
    await expect(box).to_be_focused()
    await expect(card.get_by_role("button", name="Edit")).to_be_hidden()
    await box.fill('{"path": "notes.txt", "content": ')
    await expect(approve).to_have_text("Approve changes")
    await approve.click()
    assert await box.evaluate("box => box.validationMessage") == (
        "The arguments are not valid JSON."
    )
    await expect(turn).to_have_attribute("data-status", "paused")
    edited = {"path": "notes.txt", "content": "edited on the page"}
    await box.fill(orjson.dumps(edited).decode())

    await approve.click()

    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".answer")).to_contain_text("Written as you said.")
    files = list((settings.data_dir / "workspaces").rglob("notes.txt"))
    assert [f.read_text() for f in files] == ["edited on the page"]


async def test_a_research_plan_is_reviewed_as_a_checklist_before_it_runs(
    page: Page, app_settings: Callable[..., Settings]
) -> None:
    plan = {"tasks": [{"id": "a", "title": "Market size"}, {"id": "b", "title": "Running costs"}]}
    researcher = Researcher(orjson.dumps(plan).decode())
    app = create_app(app_settings(recommendations_enabled=False), model=researcher.model())
    async with serve(app) as url:
        await page.goto(url)
        await page.locator("#agent").select_option("deep")
        await page.locator("#review-plan").check()
        turn = await ask(page, "How big is the heat pump market?")
        card = turn.locator(".approval")
        await expect(card.locator("h3")).to_have_text("Review the research plan")
        await expect(card.locator(".approval-task")).to_have_count(2)
        assert researcher.calls["Market size"] == 0

        await expect(card.locator(".approval-task").first).not_to_be_editable()
        await card.get_by_role("button", name="Edit").click()
        await card.locator(".approval-task").first.fill("Pump market")
        await card.get_by_role("checkbox", name="Keep Running costs").uncheck()
        await expect(card.locator(".approve")).to_have_text("Approve changes")
        await card.get_by_role("button", name="Approve changes").click()

        await expect(turn).to_have_attribute("data-status", "completed")
        await expect(turn.locator(".plan .task .task-title")).to_have_text(["Pump market"])
        await expect(turn.locator(".answer")).to_have_text(REPORT)
    assert researcher.calls["Pump market"] > 0
    assert researcher.calls["Running costs"] == 0


STYLE = """e => { const s = getComputedStyle(e); return {
  background: s.backgroundColor, color: s.color, border: s.borderTopColor,
  radius: s.borderTopLeftRadius, font: s.fontFamily, cursor: s.cursor } }"""


async def test_the_decision_buttons_look_like_the_pages_own_on_a_desktop_and_a_phone(
    page: Page, asking: tuple[str, Settings], upstreams: Upstreams
) -> None:
    """Approve as the page's main button (Send), Edit and Reject as its others (New chat),
    in the light and the dark scheme; the keyboard's place is seen; axe finds nothing."""
    url, _ = asking
    upstreams.llm.script(Reply.tool_calls([WRITE]), Reply.text("Written."))
    await page.set_viewport_size(WIDE)
    await page.goto(url)
    await choose_skills(page)
    turn = await ask(page, "Write my notes")
    card = turn.locator(".approval")
    await expect(turn).to_have_attribute("data-status", "paused")
    buttons = {
        name: card.get_by_role("button", name=name) for name in ("Approve", "Edit", "Reject")
    }
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        send = await page.locator("#send").evaluate(STYLE)
        other = await page.locator("#new-chat").evaluate(STYLE)
        assert await buttons["Approve"].evaluate(STYLE) == send, scheme
        edit = await buttons["Edit"].evaluate(STYLE)
        assert edit == other, scheme
        reject = await buttons["Reject"].evaluate(STYLE)
        assert {**reject, "color": other["color"]} == other, scheme
    await page.emulate_media(color_scheme="light")

    await card.locator(".approval-reason").focus()
    await page.keyboard.press("Tab")
    await expect(buttons["Approve"]).to_be_focused()
    outline = await buttons["Approve"].evaluate(
        "e => [e.matches(':focus-visible'), getComputedStyle(e).outlineStyle,"
        " getComputedStyle(e).outlineWidth]"
    )
    assert outline == [True, "solid", "3px"]
    found = await serious_violations(page)
    await page.screenshot(path=artifact("approval-desktop.png"))

    await page.set_viewport_size(PHONE)
    await assert_fits_width(page, PHONE["width"])
    for button in buttons.values():
        await button.scroll_into_view_if_needed()
        box = await button.bounding_box()
        assert box is not None
        assert box["x"] >= 0, box
        assert box["x"] + box["width"] <= PHONE["width"], box
    await page.screenshot(path=artifact("approval-phone.png"))
    assert found == [], str(found)
