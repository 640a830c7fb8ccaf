"""The original web client, unchanged, against this service, from another origin.

`original_client/` makes the calls the original dodo-agent page makes, the way
it makes them (see its index.html). It is served from its own port, so every
call is cross-origin: the stream's `Cache-Control` header makes the browser
send a CORS preflight first, and nothing works unless the service allows it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from playwright.async_api import FilePayload, Page, expect
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from app.config import Settings
from app.factory import create_app
from tests.e2e.conftest import LOOP, Upstreams
from tests.fakes.scripted_server import Reply
from tests.support.decks import DeckModel
from tests.support.server import serve

pytestmark = LOOP

CLIENT_DIR = Path(__file__).parent / "original_client"


@contextlib.asynccontextmanager
async def client_site() -> AsyncIterator[str]:
    """The client's static files on a port of their own: another origin than the service."""
    site = Starlette(routes=[Mount("/", StaticFiles(directory=CLIENT_DIR, html=True))])
    async with serve(site, lifespan="off") as url:
        yield url


@contextlib.asynccontextmanager
async def client_and_service(
    page: Page, app_settings: Callable[..., Settings], **overrides: str
) -> AsyncIterator[str]:
    """Open the client against a service built with `overrides`; yields the client's origin.

    A `cors_origins` of "client" stands for the client's own origin.
    """
    async with client_site() as origin:
        if overrides.get("cors_origins") == "client":
            overrides["cors_origins"] = origin
        async with serve(create_app(app_settings(**overrides))) as api:
            await page.goto(f"{origin}/?api={api}")
            yield origin


async def log_entries(page: Page) -> list[str]:
    return await page.locator("#log li").all_inner_texts()


async def test_original_client_streams_renders_and_manages_history(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.tool_calls([("web_search", {"query": "rust 2024"})]),
        Reply.text("Rust 2024 is stable [1].", reasoning="Two sources agree."),
        Reply.text('{"questions": ["What is new?", "How do I migrate?", "Is it faster?"]}'),
    )
    async with client_and_service(page, app_settings):
        await page.locator("#question").fill("What is Rust 2024?")
        await page.locator("#send").click()

        await expect(page.locator("#status")).to_have_text("completed")
        await expect(page.locator("#answer")).to_have_text("Rust 2024 is stable [1].")
        await expect(page.locator("#thinking")).to_contain_text("Two sources agree.")
        await expect(page.locator("#tools li")).to_have_text(["web_search: done"])
        await expect(page.locator("#references a")).to_have_text(
            ["rust 2024 result 1", "rust 2024 result 2"]
        )
        await expect(page.locator("#recommend button")).to_have_text(
            ["What is new?", "How do I migrate?", "Is it faster?"]
        )
        await expect(page.locator("#errors")).to_be_empty()
        await expect(page.locator("#log li").last).to_have_text("stream: closed")

        await page.locator("#history").click()
        record = page.locator("#records li")
        await expect(record.locator(".open")).to_have_text(
            ["What is Rust 2024? (chat, file: none)"]
        )
        await record.locator(".open").click()
        message = page.locator("#session .message")
        await expect(message).to_have_count(1)
        await expect(message).to_contain_text("What is Rust 2024? => Rust 2024 is stable [1].")
        await expect(message).to_contain_text("thinking: ")
        await expect(message).to_contain_text("Two sources agree.")
        await expect(message).to_contain_text("refs: https://example.test/rust-2024/1")
        await expect(message).to_have_text(re.compile(r"at \d{4}-\d\d-\d\dT"))

        # The file endpoints come with the file agent; with or without them, their
        # answers must be readable from the client's origin (not a CORS network error).
        await page.locator("#files").click()
        await expect(page.locator("#log li").last).to_have_text(re.compile(r"files: (200|404)"))
        notes = FilePayload(name="notes.txt", mimeType="text/plain", buffer=b"Some notes.")
        await page.locator("#upload").set_input_files(files=[notes])
        await expect(page.locator("#log li").last).to_have_text(re.compile(r"upload: (200|404)"))

        await record.locator(".delete").click()
        await expect(page.locator("#records li")).to_have_count(0)

    log = await log_entries(page)
    assert log[:2] == ["stream: 200", "stream: closed"]
    assert "delete: ok" in log
    assert not [entry for entry in log if "network error" in entry or "bad frame" in entry]


async def test_original_client_stop_ends_the_stream_and_frees_the_conversation(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.hang(first_text="Once upon"), Reply.text("A short one."))
    async with client_and_service(page, app_settings, cors_origins="client"):
        await page.locator("#question").fill("Tell me a story")
        await page.locator("#send").click()
        await expect(page.locator("#answer")).to_have_text("Once upon")

        await page.locator("#stop").click()
        # The client keeps reading: the service ends the stream itself.
        await expect(page.locator("#status")).to_have_text("stopped")
        closed = page.locator("#log li", has_text="stream: closed")
        await expect(closed).to_have_count(1)
        await expect(page.locator("#log li", has_text="stop: true")).to_have_count(1)

        await page.locator("#question").fill("A shorter one, then")
        await page.locator("#send").click()
        await expect(page.locator("#status")).to_have_text("completed")
        await expect(page.locator("#answer")).to_have_text("A short one.")

    log = await log_entries(page)
    # The stop's answer and the end of the stream race each other; both must come.
    assert log[0] == "stream: 200"
    assert sorted(log[1:3]) == ["stop: true", "stream: closed"]
    assert log[3:] == ["stream: 200", "stream: closed"]


async def test_original_client_is_refused_when_auth_is_on_and_origins_are_a_wildcard(
    page: Page, app_settings: Callable[..., Settings]
) -> None:
    async with client_and_service(page, app_settings, api_keys="key-a:alice", cors_origins="*"):
        await page.locator("#history").click()
        await expect(page.locator("#log li")).to_have_text(["history: network error"])
        await page.locator("#question").fill("Hello?")
        await page.locator("#send").click()
        await expect(page.locator("#log li")).to_have_text(
            ["history: network error", "stream: network error"]
        )


async def test_original_client_gets_a_deck_as_a_download_link_in_the_answer(
    page: Page, app_settings: Callable[..., Settings], upstreams: Upstreams
) -> None:
    """The original client shows only text: the deck's link must be written in the answer,
    and the events it does not know (`file`, `deck`) must not break its stream."""
    upstreams.llm.responder = DeckModel(["Solar power", "Agenda", "How it works", "Thanks"])
    async with client_and_service(page, app_settings, pptx_previews="false"):
        await page.locator("#agent").select_option("pptx")
        await page.locator("#question").fill("4 friendly slides on solar power for students")
        await page.locator("#send").click()

        await expect(page.locator("#status")).to_have_text("completed")
        await expect(page.locator("#answer")).to_contain_text(
            re.compile(r"\[Solar power v1\.pptx\]\(/file/download/[0-9a-f]+\)")
        )
        await expect(page.locator("#thinking")).to_contain_text("Template: Ocean")
        await expect(page.locator("#errors")).to_be_empty()

    log = await log_entries(page)
    assert log == ["stream: 200", "stream: closed"]
