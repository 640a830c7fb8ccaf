"""One turn on the chat page: a failed one offers one way to ask again, and a long question
is folded to its first lines."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest_asyncio
from playwright.async_api import Locator, Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, PHONE, Upstreams, artifact
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_chat_page import ask, assert_fits_width
from tests.fakes.scripted_server import Reply
from tests.support.server import serve

pytestmark = LOOP


@pytest_asyncio.fixture(loop_scope="package")
async def app_url(app_settings: Callable[..., Settings]) -> AsyncIterator[str]:
    async with serve(create_app(app_settings(recommendations_enabled=False))) as url:
        yield url


async def assert_one_way_to_ask_again(turn: Locator) -> None:
    """Retry, beside the reason, and no Regenerate that would do the same."""
    await expect(turn.locator(".error-text")).to_have_text(
        "The language model is unavailable right now."
    )
    await expect(turn.get_by_role("button", name="Retry")).to_be_visible()
    await expect(turn.get_by_role("button", name="Regenerate answer")).to_be_hidden()


async def test_a_failed_turn_offers_retry_alone(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    # Three failed calls: the first and its two retries (the tests' LLM_MAX_RETRIES).
    upstreams.llm.script(Reply.error(500), Reply.error(500), Reply.error(500), Reply.text("Blue."))
    await page.goto(app_url)
    failed = await ask(page, "Why is the sky blue?")
    await expect(failed).to_have_attribute("data-status", "failed")
    await assert_one_way_to_ask_again(failed)
    await page.reload()
    failed = page.locator(".turn")
    await assert_one_way_to_ask_again(failed)
    await page.screenshot(path=artifact("failed-turn.png"))
    found = await serious_violations(page)
    assert found == [], str(found)

    await failed.get_by_role("button", name="Retry").click()
    answered = page.locator(".turn")
    await expect(answered).to_have_attribute("data-status", "completed")
    await expect(answered.locator(".answer")).to_have_text("Blue.")
    await expect(answered.get_by_role("button", name="Regenerate answer")).to_be_visible()
    # The failed version is kept a step away, as it was.
    await answered.get_by_role("button", name="Previous version").click()
    await expect(answered.locator(".version-count")).to_have_text("1/2")
    await assert_one_way_to_ask_again(page.locator(".turn"))


LONG_QUESTION = "\n".join(
    f"Line {n} of a pasted document: " + "words " * 20 for n in range(1, 400)
)[:32_000]


async def assert_folded(page: Page, turn: Locator) -> None:
    """The question's first lines, and a button that shows the rest and folds it again."""
    question = turn.locator(".question")
    unfold = turn.get_by_role("button", name="Show more")
    await expect(unfold).to_have_attribute("aria-expanded", "false")
    await expect(question).to_contain_text("Line 1 of a pasted document")
    folded = await question.bounding_box()
    assert folded is not None
    assert folded["height"] < 300, f"not folded: {folded}"
    await assert_fits_width(page, PHONE["width"])
    await page.screenshot(path=artifact("long-question-folded.png"))
    await unfold.click()
    fold = turn.get_by_role("button", name="Show less")
    await expect(fold).to_have_attribute("aria-expanded", "true")
    unfolded = await question.bounding_box()
    assert unfolded is not None
    assert unfolded["height"] > 20 * folded["height"]
    await fold.click()
    await expect(unfold).to_be_visible()


async def test_a_long_question_is_folded_to_its_first_lines(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text("A long read."), Reply.text("Short."))
    await page.set_viewport_size(PHONE)
    await page.goto(app_url)
    turn = await ask(page, LONG_QUESTION)
    await expect(turn).to_have_attribute("data-status", "completed")
    await assert_folded(page, turn)
    found = await serious_violations(page)
    assert found == [], str(found)

    await page.reload()
    await expect(page.locator(".turn .answer")).to_have_text(["A long read."])
    await assert_folded(page, page.locator(".turn"))

    # A short question has nothing to unfold.
    short = await ask(page, "And briefly?")
    await expect(short).to_have_attribute("data-status", "completed")
    await expect(short.locator(".fold-toggle")).to_have_count(0)
