"""Memory and projects on the page: the Memory screen, "Saved to memory" with its Undo, a
temporary chat, and a project's screen, chat and conversations moved in and out."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from playwright.async_api import FilePayload, Page, Route, expect

from tests.e2e.conftest import LOOP, Upstreams, artifact
from tests.e2e.test_accessibility_page import serious_violations
from tests.e2e.test_chat_page import ask
from tests.fakes.scripted_server import Reply

pytestmark = LOOP


async def memory_of(url: str) -> list[str]:
    async with httpx.AsyncClient(base_url=url) as client:
        items: list[dict[str, Any]] = (await client.get("/memory")).json()["data"]
    return [item["content"] for item in items]


async def test_the_memory_screen_lists_adds_edits_deletes_and_switches_off(
    page: Page, app_url: str
) -> None:
    await page.goto(app_url)
    await page.get_by_role("button", name="Account").click()
    await page.get_by_role("button", name="Open your memory").click()
    await expect(page.locator("#memory-items-empty")).to_be_visible()
    await expect(page.get_by_label("Use memory in my conversations")).to_be_checked()

    for fact in ("I prefer metric units", "I live in Lyon"):
        await page.get_by_label("Something to remember").fill(fact)
        await page.get_by_role("button", name="Add", exact=True).click()
    items = page.locator("#memory-items li")
    await expect(items.locator(".memory-text")).to_have_text(
        ["I live in Lyon", "I prefer metric units"]
    )
    found = await serious_violations(page)
    await page.screenshot(path=artifact("memory-screen.png"))

    await page.get_by_role("button", name="Edit “I live in Lyon”").click()
    await page.get_by_label("The item, changed").fill("I live in Grenoble")
    await page.get_by_label("The item, changed").press("Enter")
    await expect(items.locator(".memory-text").first).to_have_text("I live in Grenoble")

    delete = page.get_by_role("button", name="Delete “I prefer metric units”")
    await delete.click()
    await page.get_by_role("button", name="Delete? Delete “I prefer metric units”").click()
    await expect(items).to_have_count(1)
    kept = await memory_of(app_url)

    await page.get_by_label("Use memory in my conversations").uncheck()
    async with httpx.AsyncClient(base_url=app_url) as client:
        await expect(page.get_by_label("Use memory in my conversations")).not_to_be_checked()
        switched = (await client.get("/memory/settings")).json()["data"]

    clear = page.locator("#memory-clear")
    await clear.click()
    await clear.click()
    await expect(page.locator("#memory-items-empty")).to_be_visible()

    assert found == [], str(found)
    assert kept == ["I live in Grenoble"]
    assert switched == {"enabled": False}
    assert await memory_of(app_url) == []


async def test_facts_added_faster_than_the_server_answers_are_all_kept_in_order(
    page: Page, app_url: str
) -> None:
    """CI once kept one fact of two added in quick succession: the first add, landing as
    the second was typed, emptied the box."""
    typed = asyncio.Event()

    async def hold_the_first_add(route: Route) -> None:
        if route.request.method == "POST":
            await typed.wait()
        await route.continue_()

    await page.route("**/memory", hold_the_first_add)
    await page.goto(app_url)
    await page.get_by_role("button", name="Account").click()
    await page.get_by_role("button", name="Open your memory").click()
    await expect(page.locator("#memory-items-empty")).to_be_visible()
    box = page.get_by_label("Something to remember")
    add = page.get_by_role("button", name="Add", exact=True)
    try:
        await box.fill("I prefer metric units")
        await add.click()
        await box.fill("I live in Lyon")
        await add.click()
        await expect(box).to_have_value("")
    finally:
        typed.set()
    await expect(page.locator("#memory-items .memory-text")).to_have_text(
        ["I live in Lyon", "I prefer metric units"]
    )
    assert await memory_of(app_url) == ["I live in Lyon", "I prefer metric units"]


async def test_an_answer_that_saved_to_memory_says_so_and_undo_takes_it_back(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.tool_calls([("remember", {"action": "save", "content": "I am vegetarian"})]),
        Reply.text("Noted: no meat for you."),
        Reply.text('{"questions": []}'),
    )
    await page.goto(app_url)
    turn = await ask(page, "Remember that I am vegetarian")
    await expect(turn).to_have_attribute("data-status", "completed")
    note = turn.locator(".memory-note")
    await expect(note.locator(".memory-text")).to_have_text("Saved to memory: “I am vegetarian”")
    saved = await memory_of(app_url)
    await page.reload()
    turn = page.locator(".turn").last
    await expect(turn.locator(".memory-note .memory-text")).to_have_text(
        "Saved to memory: “I am vegetarian”"
    )
    await turn.get_by_role("button", name="Undo").click()
    await expect(turn.locator(".memory-note .memory-status")).to_have_text("Undone.")

    assert saved == ["I am vegetarian"]
    assert await memory_of(app_url) == []


async def test_a_temporary_chat_is_marked_and_neither_reads_nor_saves_memory(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    async with httpx.AsyncClient(base_url=app_url) as client:
        await client.post("/memory", json={"content": "My name is Ada"})
    upstreams.llm.script(Reply.text("Hello there."), Reply.text('{"questions": []}'))
    await page.goto(app_url)
    await page.get_by_label("Temporary chat").check()
    await expect(page.locator("#temporary-note")).to_be_visible()
    turn = await ask(page, "Who am I?")
    await expect(turn).to_have_attribute("data-status", "completed")
    sent = upstreams.llm.requests[-2]

    prompt = upstreams.llm.system_text(sent)
    assert "Ada" not in prompt
    assert "remember" not in [t["function"]["name"] for t in sent.get("tools", [])]


async def test_a_project_is_made_furnished_chatted_in_and_a_conversation_moved_out(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.text("Arr, the shed."),
        Reply.text('{"questions": []}'),
        Reply.text("Hello outside."),
        Reply.text('{"questions": []}'),
    )
    await page.goto(app_url)
    await page.get_by_role("button", name="New project").click()
    await expect(page.get_by_label("Project title")).to_be_focused()
    await page.get_by_label("Project title").fill("Flat")
    await page.get_by_label("Instructions").fill("Always answer like a pirate.")
    await page.get_by_label("Default agent").select_option("chat")
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.locator("#project-status")).to_have_text("Saved.")
    rules = FilePayload(name="rules.md", mimeType="text/markdown", buffer=b"Bikes: shed.")
    await page.locator("#project-file-pick").set_input_files(files=[rules])
    await expect(page.locator("#project-files li span")).to_have_text(["rules.md"])
    await expect(page.locator("#projects .open-project")).to_have_text(["Flat"])
    found = await serious_violations(page)
    await page.screenshot(path=artifact("project-screen.png"))

    await page.get_by_role("button", name="New chat in this project").click()
    await expect(page.locator("#project-chip")).to_have_text("In project: Flat")
    turn = await ask(page, "Where do bikes go?")
    await expect(turn).to_have_attribute("data-status", "completed")
    in_project = upstreams.llm.system_text(upstreams.llm.requests[-2])
    await page.locator("#projects .open-project").click()
    listed = page.locator("#project-conversations .open")
    await expect(listed).to_have_text(["Where do bikes go?"])

    await listed.click()
    item = page.locator("#conversations li:not(.period)").first
    await expect(item.locator(".project-tag")).to_have_text("Flat")
    await item.hover()
    await item.get_by_role("button", name="More for “Where do bikes go?”").click()
    await item.get_by_label("Project").select_option("")
    await expect(page.locator("#project-chip")).to_be_hidden()
    await expect(item.locator(".project-tag")).to_have_count(0)
    await ask(page, "Still a pirate?")
    await expect(page.locator(".turn").last).to_have_attribute("data-status", "completed")
    outside = upstreams.llm.system_text(upstreams.llm.requests[-2])

    assert found == [], str(found)
    assert "Always answer like a pirate." in in_project
    assert "search_project_files" in in_project
    assert "pirate" not in outside


async def test_new_chat_pressed_while_the_project_loads_starts_the_chat_in_it(
    page: Page, app_url: str
) -> None:
    made = await page.request.post(f"{app_url}/projects", data={"name": "Flat"})
    project_id = (await made.json())["data"]["projectId"]
    held: list[Route] = []
    arrived = asyncio.Event()

    async def hold(route: Route) -> None:
        """The project's read waits here until the test lets it through."""
        held.append(route)
        arrived.set()

    await page.goto(app_url)
    await page.route(f"**/projects/{project_id}", hold)
    await page.locator("#projects .open-project").click()
    await asyncio.wait_for(arrived.wait(), 15)
    await page.get_by_role("button", name="New chat in this project").click()
    await held[0].continue_()

    await expect(page.locator("#project-chip")).to_have_text("In project: Flat")
    await expect(page.locator("#question")).to_be_visible()
