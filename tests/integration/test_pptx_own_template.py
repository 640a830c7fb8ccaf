"""A deck on the user's own template, its PDF, and one-slide edits, over HTTP on a fake model.

What a user sees: a company template uploaded as a `.pptx` and named by
`templateFileId` gives a deck whose master, layouts and theme are the
template's (read back with python-pptx), with the layout each slide kind
went to in the `deck` event; a template the builder cannot use fails before
any model call with what it lacks; every version comes as a PDF of as many
pages as slides (read with pypdf); "change slide N: …" asks the model for
that slide alone and gives a version in which only that slide differs.
"""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from pptx import Presentation
from pptx.opc.constants import RELATIONSHIP_TYPE as RT
from pypdf import PdfReader

from app.agents import pptx
from app.config import Settings
from app.core.events import ErrorEvent
from tests.conftest import require_binary
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import Backend, running_service, service_settings, settings_for
from tests.support.agents import agent_core, run_turn
from tests.support.decks import DeckModel, outline, slide
from tests.support.pptx_templates import LOGO, THEME_NAME, company_template
from tests.support.scripted_model import ScriptedModel
from tests.support.sse import Event, collect, text_of

TITLES = [
    "Solar power",
    "What we will cover",
    "How it works",
    "From light to current",
    "Solar or coal",
    "A rooftop system",
    "Costs over time",
    "Prices falling",
    "Thank you",
]
"""One slide of each kind, cover to closing."""
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
NO_PREVIEWS = {"pptx_previews": False}
LINK = re.compile(r"\[[^\]]+\.pptx\]\((/file/download/[0-9a-f]+)\)")


async def upload(client: httpx.AsyncClient, name: str, data: bytes, mime: str = PPTX) -> str:
    response = await client.post("/file/upload", files={"file": (name, data, mime)})
    assert response.status_code == 200, response.text
    file_id: str = response.json()["data"]["fileId"]
    return file_id


async def ask(
    client: httpx.AsyncClient, conversation: str, query: str, **fields: Any
) -> list[Event]:
    body = {"query": query, "conversationId": conversation, **fields}
    async with client.stream("POST", "/agent/pptx/stream", json=body) as response:
        assert response.status_code == 200
        return await collect(response)


async def download(client: httpx.AsyncClient, url: str) -> bytes:
    response = await client.get(url)
    assert response.status_code == 200
    return response.content


def ready(events: list[Event]) -> Event:
    [event] = [e for e in events if e["type"] == "deck" and e["stage"] == "ready"]
    return event


def texts(deck: bytes) -> list[list[str]]:
    """Every slide's texts (shapes and table cells), in order; decorations have none."""
    slides = []
    for page in Presentation(io.BytesIO(deck)).slides:
        found = []
        for shape in page.shapes:
            if shape.name.startswith("deco-"):
                continue
            if shape.has_text_frame:
                found.append(shape.text_frame.text)
            elif shape.has_table:
                found += [c.text for row in shape.table.rows for c in row.cells]
        slides.append(found)
    return slides


def own_settings(backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, **more: Any) -> Settings:
    return settings_for(backend, tmp_path, fake_llm, **{**NO_PREVIEWS, **more})


async def test_a_deck_on_an_uploaded_template_has_its_master_layouts_and_theme(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    model = DeckModel(TITLES, own_template=True)
    fake_llm.responder = model
    async with running_service(own_settings(backend, tmp_path, fake_llm)) as client:
        template = await upload(client, "Acme brand.pptx", company_template())
        info = (await client.get(f"/file/info/{template}")).json()["data"]
        events = await ask(client, "c-own", "9 slides on solar power", templateFileId=template)
        [link] = LINK.findall(text_of(events))
        deck = Presentation(io.BytesIO(await download(client, link)))

    assert info["status"] == "ready"
    assert events[-1]["status"] == "completed"
    assert "TEMPLATE" not in model.asked  # the user chose: no model call picks one
    event = ready(events)
    assert event["template"] == "Acme brand"
    layouts = {item["pageType"]: item["layout"] for item in event["layouts"]}
    assert layouts["cover"] == "Acme Title Slide"
    assert layouts["bullets"] == "Acme Title and Content"
    assert layouts["comparison"] == "Acme Comparison"
    assert layouts["section"] == "Acme Section Header"
    assert layouts["image_text"] == "Acme Picture with Caption"
    used = [s.slide_layout.name for s in deck.slides]
    assert len(used) == len(TITLES)
    assert all(name.startswith("Acme ") for name in used)
    # No picture provider: the picture slide is drawn on the text layout, not an empty frame.
    assert used[TITLES.index("A rooftop system")] == "Acme Title and Content"
    [master] = deck.slide_masters
    assert LOGO in [shape.name for shape in master.shapes]
    theme = master.part.part_related_by(RT.THEME).blob.decode()
    assert f'name="{THEME_NAME}"' in theme
    assert [s.shapes.title.text for s in deck.slides] == TITLES
    chart_slide = deck.slides[TITLES.index("Prices falling")]
    [chart] = [s for s in chart_slide.shapes if s.has_chart]
    assert list(chart.chart.plots[0].categories) == ["2010", "2015", "2020"]


BARE = (
    "Title and Content",
    "Two Content",
    "Comparison",
    "Content with Caption",
    "Picture with Caption",
    "Title and Vertical Text",
    "Vertical Title and Text",
)
"""python-pptx's layouts that have a large body: without them, no content slide fits."""


async def test_a_template_without_a_content_layout_is_refused_naming_it_before_the_stream(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    settings = own_settings(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as client:
        template = await upload(client, "bare.pptx", company_template(drop=BARE))
        body = {"query": "9 slides", "conversationId": "c-bare", "templateFileId": template}
        refused = await client.post("/agent/pptx/stream", json=body)
        listed = await client.get("/session/list")

    assert refused.status_code == 400
    assert refused.json()["data"] == {"error": "PPT_TEMPLATE_UNUSABLE"}
    assert "Title and Content" in refused.json()["message"]
    assert listed.json()["data"]["total"] == 0
    assert fake_llm.requests == []


async def test_a_build_on_a_template_it_cannot_use_fails_before_any_model_call(
    tmp_path: Path, sqlite_url: str
) -> None:
    """The build checks again (a stream refused up front never gets here; a resumed build
    after a restart does): failed, with what is missing, and the model never asked."""
    settings = service_settings(tmp_path, sqlite_url, pptx_previews=False)
    model = ScriptedModel()
    async with agent_core(settings, model) as core:
        stored = await core.documents.upload(
            "u1", "bare.pptx", io.BytesIO(company_template(drop=BARE))
        )
        events = await run_turn(
            pptx.build(core, settings), "9 slides on solar power", template_file_id=stored.id
        )

    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "PPT_TEMPLATE_UNUSABLE"
    assert "Title and Content" in error.detail
    assert model.requests == []


async def test_a_template_that_is_not_a_readable_pptx_of_the_caller_is_refused_before_the_stream(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    settings = own_settings(
        Backend(sqlite_url, "", ""), tmp_path, fake_llm, api_keys="ka:alice,kb:bob"
    )
    alice, bob = {"Authorization": "Bearer ka"}, {"Authorization": "Bearer kb"}
    async with running_service(settings) as client:
        client.headers.update(alice)
        template = await upload(client, "mine.pptx", company_template())
        text = await upload(client, "notes.txt", b"not a deck", "text/plain")
        body = {"query": "a deck", "conversationId": "c-refused"}
        as_bob = await client.post(
            "/agent/pptx/stream", json={**body, "templateFileId": template}, headers=bob
        )
        not_a_deck = await client.post("/agent/pptx/stream", json={**body, "templateFileId": text})
        other_agent = await client.post(
            "/agent/chat/stream", json={**body, "templateFileId": template}
        )

    assert as_bob.status_code == 404
    assert not_a_deck.status_code == 400
    assert "pptx" in not_a_deck.json()["message"]
    assert other_agent.status_code == 400
    assert fake_llm.requests == []


async def test_every_deck_version_comes_as_a_pdf_of_one_page_a_slide(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    require_binary("soffice", "LibreOffice (Debian's libreoffice-impress)")
    fake_llm.responder = DeckModel(TITLES)
    settings = own_settings(Backend(sqlite_url, "", ""), tmp_path, fake_llm, pptx_pdf=True)
    async with running_service(settings) as client:
        events = await ask(client, "c-pdf", "9 slides on solar power")
        [pdf_event] = [e for e in events if e["type"] == "file" and e["name"].endswith(".pdf")]
        pdf = await download(client, pdf_event["url"])
        history = (await client.get("/session/c-pdf")).json()["data"]["messages"]

    assert pdf_event["name"] == "Solar power v1.pdf"
    assert pdf_event["mimeType"] == "application/pdf"
    assert len(PdfReader(io.BytesIO(pdf)).pages) == len(TITLES)
    assert ready(events)["pdf"] == pdf_event["url"]
    assert pdf_event["url"] in text_of(events)
    assert pdf_event["fileId"] in [f["fileId"] for f in history[0]["files"]]


async def test_without_libreoffice_the_deck_comes_with_the_reason_it_has_no_pdf(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))
    fake_llm.responder = DeckModel(TITLES)
    settings = own_settings(Backend(sqlite_url, "", ""), tmp_path, fake_llm, pptx_pdf=True)
    async with running_service(settings) as client:
        events = await ask(client, "c-nopdf", "9 slides on solar power")

    assert events[-1]["status"] == "completed"
    files = [e for e in events if e["type"] == "file"]
    assert [e["name"] for e in files] == ["Solar power v1.pptx", "Solar power v1.pdf"]
    reason = ready(events)["pdfError"]
    assert "LibreOffice" in reason
    assert reason in text_of(events)
    assert (files[1]["status"], files[1]["error"]) == ("failed", reason)
    assert ready(events)["pdf"] is None


async def test_changing_one_slide_asks_for_that_slide_alone_and_keeps_the_others(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    model = DeckModel(TITLES)
    changed = slide("How a cell works", "bullets")
    changed["fields"]["bullets"] = ["Light frees electrons in silicon", "A field moves them"]
    model.answers["SLIDE"] = [orjson.dumps(changed).decode()]
    fake_llm.responder = model
    async with running_service(own_settings(backend, tmp_path, fake_llm)) as client:
        first = await ask(client, "c-slide", "9 slides on solar power")
        before = len(fake_llm.requests)
        second = await ask(client, "c-slide", "Change slide 4: explain the cell, not the panel")
        calls = len(fake_llm.requests) - before
        [old_link] = LINK.findall(text_of(first))
        new_link = LINK.findall(text_of(second))[0]
        old, new = await download(client, old_link), await download(client, new_link)

    assert second[-1]["status"] == "completed"
    assert calls == 1  # the one slide: no routing, no outline, no other slide asked again
    assert model.asked["SLIDE"] == 1
    assert "MODIFY" not in model.asked
    before_texts, after_texts = texts(old), texts(new)
    assert len(after_texts) == len(before_texts) == len(TITLES)
    differs = [
        n for n, (a, b) in enumerate(zip(before_texts, after_texts, strict=True), 1) if a != b
    ]
    assert differs == [4]
    assert after_texts[3][0] == "How a cell works"
    event = ready(second)
    assert [v["version"] for v in event["versions"]] == [1, 2]
    assert event["versions"][0]["url"] == old_link  # the first version stays downloadable


async def test_ag_ui_ai_sdk_and_a2a_pass_the_template_on_too(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    """Each format's way of naming it reaches the same check: a text file is no template."""
    settings = own_settings(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as client:
        text = await upload(client, "notes.txt", b"not a deck", "text/plain")
        ag_ui = await client.post(
            "/ag-ui/pptx",
            json={
                "threadId": "c-ag-ui",
                "runId": "r-1",
                "messages": [{"id": "u-1", "role": "user", "content": "A deck"}],
                "forwardedProps": {"templateFileId": text},
            },
        )
        ai_sdk = await client.post(
            "/ai-sdk/pptx",
            json={
                "id": "c-ai-sdk",
                "messages": [
                    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "A deck"}]}
                ],
                "trigger": "submit-message",
                "templateFileId": text,
            },
        )
        message = {
            "role": "user",
            "parts": [{"kind": "text", "text": "A deck"}],
            "messageId": "m-a2a",
            "contextId": "c-a2a",
            "metadata": {"skill": "pptx", "templateFileId": text},
        }
        a2a = await client.post(
            "/a2a",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {"message": message},
            },
        )

    for answer in (ag_ui, ai_sdk):
        assert answer.status_code == 400, answer.text
        assert "pptx" in answer.json()["message"]
    assert "pptx" in a2a.json()["error"]["message"]
    assert fake_llm.requests == []


def saved_by_libreoffice(template: bytes, folder: Path) -> bytes:
    """The template as LibreOffice Impress saves it: opened as ODP and written back as .pptx
    (its layouts renamed "Title, Content"…, and no placeholder numbered: every idx is 0)."""
    (folder / "in").mkdir(parents=True)
    (folder / "in" / "template.pptx").write_bytes(template)
    profile = f"-env:UserInstallation={(folder / 'profile').as_uri()}"
    for source, target, kind in (
        (folder / "in" / "template.pptx", folder / "odp", "odp"),
        (folder / "odp" / "template.odp", folder / "out", "pptx"),
    ):
        subprocess.run(
            ["soffice", profile, "--headless", "--convert-to", kind, "--outdir", str(target),
             str(source)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    return (folder / "out" / "template.pptx").read_bytes()


async def test_a_template_saved_by_libreoffice_gets_each_field_in_its_own_placeholder(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    require_binary("soffice", "LibreOffice (Debian's libreoffice-impress)")
    template = saved_by_libreoffice(company_template(), tmp_path / "lo")
    model = DeckModel(TITLES, own_template=True)
    slides = [
        slide(t, p["pageType"], own_template=True)
        for t, p in zip(TITLES, outline(TITLES)["slides"], strict=True)
    ]
    for page in slides:
        for heading in ("left_heading", "right_heading"):  # "Title, 2 Content" has none
            page["fields"].pop(heading, None)
    model.answers["SCHEMA"] = [orjson.dumps({"slides": slides}).decode()]
    fake_llm.responder = model
    settings = own_settings(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as client:
        file_id = await upload(client, "impress.pptx", template)
        events = await ask(client, "c-lo", "9 slides on solar power", templateFileId=file_id)
        [link] = LINK.findall(text_of(events))
        deck = Presentation(io.BytesIO(await download(client, link)))

    assert events[-1]["status"] == "completed"
    layouts = {item["pageType"]: item["layout"] for item in ready(events)["layouts"]}
    assert layouts["bullets"] == "Title, Content"
    assert layouts["comparison"] == "Title, 2 Content"
    assert [s.shapes.title.text for s in deck.slides] == TITLES
    versus = deck.slides[TITLES.index("Solar or coal")]
    columns = sorted(
        (s for s in versus.placeholders if s.name in ("left_points", "right_points")),
        key=lambda s: s.left,
    )
    assert [c.name for c in columns] == ["left_points", "right_points"]
    assert columns[0].left + columns[0].width <= columns[1].left  # side by side, not stacked
    table_slide = deck.slides[TITLES.index("Costs over time")]
    [table] = [s for s in table_slide.shapes if s.has_table]
    assert table.top > versus.shapes.title.top + versus.shapes.title.height // 2
