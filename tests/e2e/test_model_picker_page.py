"""The chat page's model picker: it offers the catalog, shows the model a conversation used
last and the user's own choice for a new one (kept by the service, so on every device), and
shows under each answer the model that wrote it and what it cost."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import orjson
from playwright.async_api import Browser, Page, expect

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, PHONE, WAIT_MS, Upstreams, artifact
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Body, Reply
from tests.support.server import serve

pytestmark = LOOP


def answering(words: str) -> Callable[[Body], Reply]:
    def respond(body: Body) -> Reply:
        return Reply.text(words, usage=(1000, 100))

    return respond


def catalog(strong: FakeOpenAI, **fields: Any) -> str:
    """`MODELS`: the fake `strong` as a second model, "Strong", beside the default."""
    entry = {
        "id": "strong",
        "label": "Strong",
        "provider": "openai",
        "baseUrl": strong.base_url,
        "apiKey": "sk-strong-secret",
        "model": "strong-model",
        **fields,
    }
    return orjson.dumps([entry]).decode()


async def test_the_picked_model_answers_is_shown_with_its_cost_and_kept_per_conversation(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.responder = answering("Default here.")
    async with FakeOpenAI(answering("Strong here.")) as strong:
        models = catalog(strong, vision=True, inputPricePerMTok=3.0, outputPricePerMTok=15.0)
        settings = app_settings(models=models, recommendations_enabled=False)
        async with serve(create_app(settings)) as url:
            await page.goto(url)
            picker = page.locator("#model")
            await expect(picker.locator("option")).to_have_text(
                ["Agent default (fake-model)", "fake-model", "Strong (images)"]
            )

            await picker.select_option("strong")
            await page.locator("#question").fill("Who answers?")
            await page.locator("#question").press("Enter")
            first = page.locator(".turn").last
            await expect(first).to_have_attribute("data-status", "completed")
            await expect(first.locator(".answer")).to_have_text("Strong here.")
            # 1000 tokens in at $3 and 100 out at $15 per million.
            await expect(first.locator(".turn-model")).to_have_text("Strong · $0.0045")
            strong_chat = page.url

            await page.locator("#new-chat").click()
            await picker.select_option("")
            await page.locator("#question").fill("And now?")
            await page.locator("#question").press("Enter")
            other = page.locator(".turn").last
            await expect(other.locator(".answer")).to_have_text("Default here.")
            await expect(other.locator(".turn-model")).to_have_text("fake-model")

            # Back in the first conversation (a reload reads it from the history): its
            # model is picked again, and its answer still says who wrote it and the cost.
            await page.goto(strong_chat)
            await page.reload()
            await expect(page.locator(".turn .answer")).to_have_text(["Strong here."])
            await expect(picker).to_have_value("strong")
            await expect(page.locator(".turn .turn-model")).to_have_text(["Strong · $0.0045"])
            await page.locator("#question").fill("Still you?")
            await page.locator("#question").press("Enter")
            await expect(page.locator(".turn").last.locator(".answer")).to_have_text("Strong here.")
            await page.screenshot(path=artifact("model-picker.png"))

    assert [body["model"] for body in strong.requests] == ["strong-model", "strong-model"]
    assert [body["model"] for body in upstreams.llm.requests] == ["fake-model"]


async def test_the_users_model_follows_them_to_another_device(
    page: Page, browser: Browser, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.responder = answering("Default here.")
    async with FakeOpenAI(answering("Strong here.")) as strong:
        settings = app_settings(
            models=catalog(strong),
            agent_models="deep:strong",
            recommendations_enabled=False,
        )
        async with serve(create_app(settings)) as url:
            # The laptop: a chat on the agent's own model, then Strong picked for the next.
            await page.goto(url)
            picker = page.locator("#model")
            await expect(picker.locator("option").first).to_have_text("Agent default (fake-model)")
            await page.locator("#agent").select_option("deep")
            await expect(picker.locator("option").first).to_have_text("Agent default (Strong)")
            await page.locator("#agent").select_option("chat")
            await page.locator("#question").fill("Who answers?")
            await page.locator("#question").press("Enter")
            await expect(page.locator(".turn .answer")).to_have_text("Default here.")
            default_chat = page.url
            await page.locator("#new-chat").click()
            async with page.expect_response("**/account/preferences") as saved:
                await picker.select_option("strong")
            assert (await saved.value).ok

            # The phone, the same user (no sign-in here: everyone is the one local user):
            # a new chat offers Strong, and the laptop's chat the model its last turn used.
            phone = await browser.new_context(viewport=PHONE)
            phone.set_default_timeout(WAIT_MS)
            try:
                other = await phone.new_page()
                errors: list[str] = []
                other.on("pageerror", lambda error: errors.append(str(error)))
                await other.goto(url)
                other_picker = other.locator("#model")
                await expect(other_picker).to_have_value("strong")
                await other.goto(default_chat)
                await expect(other.locator(".turn .answer")).to_have_text("Default here.")
                await expect(other_picker).to_have_value("default")
                await other.locator("#new-chat").click()
                await expect(other_picker).to_have_value("strong")
                await other.locator("#question").fill("And you?")
                await other.locator("#question").press("Enter")
                await expect(other.locator(".turn .answer")).to_have_text("Strong here.")
                await other.screenshot(path=artifact("model-picker-phone.png"))
                assert errors == []
            finally:
                await phone.close()

    assert [body["model"] for body in strong.requests] == ["strong-model"]


async def test_a_new_chat_in_a_project_offers_the_projects_model_over_the_users_own(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.responder = answering("Default here.")
    async with FakeOpenAI(answering("Strong here.")) as strong:
        settings = app_settings(models=catalog(strong), recommendations_enabled=False)
        async with serve(create_app(settings)) as url:
            async with httpx.AsyncClient(base_url=url) as client:
                kept = await client.patch("/account/preferences", json={"model": "default"})
                assert kept.status_code == 200, kept.text
                project = {"name": "Strong work", "defaultModel": "strong"}
                assert (await client.post("/projects", json=project)).status_code == 200
            await page.goto(url)
            picker = page.locator("#model")
            await expect(picker).to_have_value("default")
            await page.locator("#projects .open-project").click()
            await page.get_by_role("button", name="New chat in this project").click()
            await expect(picker).to_have_value("strong")
            await page.locator("#question").fill("Who answers here?")
            await page.locator("#question").press("Enter")
            await expect(page.locator(".turn .answer")).to_have_text("Strong here.")
            # Outside the project a new chat offers the user's own again.
            await page.locator("#new-chat").click()
            await expect(picker).to_have_value("default")

    assert [body["model"] for body in strong.requests] == ["strong-model"]
