"""Rating an answer on the page: a thumb up, a thumb down with what was wrong, taken back
by pressing it again, and shown again when the conversation is reopened."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page, expect

from tests.e2e.conftest import LOOP, Upstreams
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_chat_page import ask
from tests.e2e.test_sign_in_page import api
from tests.fakes.scripted_server import Reply

pytestmark = LOOP


async def stored(page: Page) -> dict[str, Any]:
    """The turn as the history keeps it."""
    conversation = page.url.split("#c=", 1)[1]
    detail = await api(page, f"/session/{conversation}")
    message: dict[str, Any] = detail["messages"][0]
    return message


async def test_an_answer_is_rated_up_then_down_with_a_comment_then_taken_back(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.text("Paris is the capital."),
        Reply.text('{"questions": ["One?", "Two?", "Three?"]}'),
    )
    await page.goto(app_url)
    turn = await ask(page, "Capital of France?")
    await expect(turn).to_have_attribute("data-status", "completed")
    good = turn.get_by_role("button", name="Good answer")
    bad = turn.get_by_role("button", name="Bad answer")

    await good.click()
    await expect(good).to_have_attribute("aria-pressed", "true")
    after_up = await stored(page)

    await bad.click()
    await expect(bad).to_have_attribute("aria-pressed", "true")
    await expect(good).to_have_attribute("aria-pressed", "false")
    box = turn.get_by_label("What was wrong with this answer? (optional)")
    await expect(box).to_be_focused()
    found = await serious_violations(page)
    await box.fill("It should say more.")
    await box.press("Enter")
    await expect(box).to_be_hidden()
    await expect(bad).to_be_focused()
    after_down = await stored(page)

    await page.reload()
    bad = page.locator(".turn").get_by_role("button", name="Bad answer")
    await expect(bad).to_have_attribute("aria-pressed", "true")
    await expect(bad).to_have_attribute("title", "Bad answer: It should say more.")
    await bad.click()
    await expect(bad).to_have_attribute("aria-pressed", "false")
    await expect(page.locator(".rating-form")).to_be_hidden()
    after_back = await stored(page)

    assert found == [], str(found)
    assert (after_up["rating"], after_up["ratingComment"]) == ("up", None)
    assert (after_down["rating"], after_down["ratingComment"]) == ("down", "It should say more.")
    assert (after_back["rating"], after_back["ratingComment"]) == (None, None)
