"""Exporting a conversation (API.md §4) through the HTTP app, on SQLite and on PostgreSQL.

A download to keep: Markdown to read, JSON with every field the history
shows; refused as the history refuses (404 for another user's, 422 for a
format it does not make).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import (
    Backend,
    ask,
    running_service,
    settings_for,
    settings_with_search,
)

EXPECTED_MARKDOWN = """# SSE, explained

## Question

What is SSE?

## Answer

Server-sent events [1].

Sources:

1. [SSE result 1](<https://example.test/SSE/1>)
2. [SSE result 2](<https://example.test/SSE/2>)

---

## Question

And why?

## Answer

One response, many events.

---
"""


async def test_a_conversation_downloads_as_markdown_or_json(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "SSE"})]),
        Reply.text("Server-sent events [1]."),
        Reply.text("One response, many events."),
    )
    settings = settings_with_search(
        backend, tmp_path, fake_llm, fake_search, api_keys="key-alice:alice,key-bob:bob"
    )
    alice = {"Authorization": "Bearer key-alice"}
    bob = {"Authorization": "Bearer key-bob"}
    async with running_service(settings) as client:
        client.headers.update(alice)
        await ask(client, "What is SSE?", "c1")
        await ask(client, "And why?", "c1")
        await client.patch("/session/c1", json={"title": "SSE, explained"})
        as_markdown = await client.get("/session/c1/export", params={"format": "markdown"})
        as_json = await client.get("/session/c1/export", params={"format": "json"})
        by_default = await client.get("/session/c1/export")
        detail = (await client.get("/session/c1")).json()["data"]
        by_bob = await client.get("/session/c1/export", headers=bob)
        unknown = await client.get("/session/nope/export")
        as_pdf = await client.get("/session/c1/export", params={"format": "pdf"})

    assert as_markdown.status_code == 200
    assert as_markdown.headers["content-type"] == "text/markdown; charset=utf-8"
    assert as_markdown.headers["content-disposition"] == (
        "attachment; filename=\"SSE, explained.md\"; filename*=UTF-8''SSE%2C%20explained.md"
    )
    assert as_markdown.text == EXPECTED_MARKDOWN
    assert by_default.text == EXPECTED_MARKDOWN
    assert as_json.headers["content-type"] == "application/json"
    assert as_json.headers["content-disposition"] == (
        "attachment; filename=\"SSE, explained.json\"; filename*=UTF-8''SSE%2C%20explained.json"
    )
    # Every turn with every field the history shows.
    assert orjson.loads(as_json.content) == detail
    assert [m["reference"][0]["url"] for m in detail["messages"][:1]] == [
        "https://example.test/SSE/1"
    ]
    assert (by_bob.status_code, by_bob.json()["code"]) == (404, 404)
    assert unknown.status_code == 404
    assert (as_pdf.status_code, as_pdf.json()["code"]) == (422, 422)


async def test_an_export_is_named_after_its_title_in_any_script(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    titles = {
        "plain": "What is SSE?",
        "accents": "Café : crème / brûlée\n<notes>",
        "chinese": "向量数据库",
        "dots": "...",
    }
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        for conversation, title in titles.items():
            await ask(client, "A question", conversation)
            await client.patch(f"/session/{conversation}", json={"title": title})
        named = {
            conversation: (await client.get(f"/session/{conversation}/export")).headers[
                "content-disposition"
            ]
            for conversation in titles
        }
        unnamed = await client.get("/session/plain/export", params={"format": "json"})

    # No character a file system refuses or a header would break on; a non-ASCII title kept
    # whole in `filename*` (RFC 6266), its ASCII letters in `filename`.
    assert named == {
        "plain": "attachment; filename=\"What is SSE.md\"; filename*=UTF-8''What%20is%20SSE.md",
        "accents": 'attachment; filename="Cafe creme brulee notes.md"; '
        "filename*=UTF-8''Caf%C3%A9%20cr%C3%A8me%20br%C3%BBl%C3%A9e%20notes.md",
        "chinese": 'attachment; filename="conversation.md"; '
        "filename*=UTF-8''%E5%90%91%E9%87%8F%E6%95%B0%E6%8D%AE%E5%BA%93.md",
        "dots": "attachment; filename=\"conversation.md\"; filename*=UTF-8''conversation.md",
    }
    assert unnamed.headers["content-disposition"].endswith("''What%20is%20SSE.json")
