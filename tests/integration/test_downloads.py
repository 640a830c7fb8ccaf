"""Downloads are data, never pages: only types a browser shows without running anything are inline.

A file someone uploaded, or an agent made from what a web page said, is
served from our origin: shown as HTML or SVG it could run script there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agents.base import BaseAgent
from app.agents.registry import AGENTS, AgentEntry
from app.agents.turn import AgentCore, Turn, TurnState
from app.config import Settings
from app.core.events import Event
from app.documents.library import generated_event
from tests.integration.service import running_service, service_settings
from tests.support.documents import docx_bytes, image_bytes, pdf_bytes
from tests.support.sse import collect

PAGE = b"<html><script>fetch('/session/list')</script></html>"
PICTURE = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


class PageMakingAgent(BaseAgent):
    """Makes files whose types would run script if a browser rendered them."""

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        assert self.core.documents is not None
        for name, data, mime in [
            ("report.html", PAGE, "text/html; charset=utf-8"),
            ("chart.svg", PICTURE, "image/svg+xml"),
        ]:
            stored = await self.core.documents.add_generated(
                turn.user_id, turn.conversation_id, name, data, mime
            )
            yield generated_event(stored)


def with_page_maker() -> list[AgentEntry]:
    def factory(core: AgentCore, settings: Settings) -> BaseAgent:
        return PageMakingAgent(core)

    return [*AGENTS, AgentEntry("pages", "Page maker", "Makes a page", factory)]


@pytest.mark.parametrize(
    ("name", "data", "served_as", "disposition"),
    [
        ("manual.pdf", pdf_bytes(["The manual."]), "application/pdf", "inline"),
        ("photo.png", image_bytes("PNG"), "image/png", "inline"),
        ("photo.jpg", image_bytes("JPEG"), "image/jpeg", "inline"),
        ("notes.txt", b"plain notes\n", "text/plain", "inline"),
        ("notes.md", b"# <b>marked</b> up\n", "text/plain", "inline"),
        ("letter.docx", docx_bytes(["Dear reader"]), DOCX_MIME, "attachment"),
    ],
    ids=["pdf", "png", "jpg", "txt", "md", "docx"],
)
async def test_uploads_are_inline_only_when_a_browser_shows_them_inert(
    tmp_path: Path, sqlite_url: str, name: str, data: bytes, served_as: str, disposition: str
) -> None:
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        uploaded = await client.post("/file/upload", files={"file": (name, data)})
        download = await client.get(f"/file/download/{uploaded.json()['data']['fileId']}")

    assert download.status_code == 200
    assert download.content == data
    assert download.headers["content-type"].partition(";")[0] == served_as
    assert download.headers["content-disposition"] == f"{disposition}; filename*=UTF-8''{name}"
    assert download.headers["x-content-type-options"] == "nosniff"


async def test_generated_html_and_svg_are_attachments_of_plain_bytes(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with running_service(service_settings(tmp_path, sqlite_url), with_page_maker()) as client:
        params = {"query": "Make me a page", "conversationId": "c-page"}
        async with client.stream("GET", "/agent/pages/stream", params=params) as response:
            events = await collect(response)
        files = [e for e in events if e["type"] == "file"]
        downloads = [await client.get(str(f["url"])) for f in files]

    assert [f["name"] for f in files] == ["report.html", "chart.svg"]
    assert [d.content for d in downloads] == [PAGE, PICTURE]
    assert [d.headers["content-type"] for d in downloads] == ["application/octet-stream"] * 2
    assert [d.headers["content-disposition"] for d in downloads] == [
        "attachment; filename*=UTF-8''report.html",
        "attachment; filename*=UTF-8''chart.svg",
    ]
    assert {d.headers["x-content-type-options"] for d in downloads} == {"nosniff"}
