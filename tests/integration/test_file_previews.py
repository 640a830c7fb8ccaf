"""`GET /file/preview/{fileId}?page=N` and `pages` in `/file/info`, over real HTTP, real files.

Pictures are checked as a user would see them: a PNG of the page's width,
not blank, different from page to page; a page drawn once is served again
with LibreOffice gone, so it was kept; and a deleted file leaves no picture.
"""

from __future__ import annotations

import asyncio
import io
import os
from datetime import UTC, datetime
from pathlib import Path

import docx
import pytest
from docx.enum.text import WD_BREAK
from PIL import Image, ImageStat
from pptx import Presentation

from app.documents.office import RenderLimits
from app.documents.previews import FilePreviews
from app.store.blobs import LocalBlobStore
from app.store.models import StoredFile
from tests.conftest import require_binary
from tests.integration.test_files_api import BOB, blobs, service, settings_for, upload
from tests.support.documents import image_bytes, pdf_bytes, xlsx_bytes

PAGE_WIDTH = 1000
PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


def two_page_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Warranty", level=1)
    document.add_paragraph("The pump is covered for seven years.")
    document.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
    document.add_paragraph("Service intervals: every two years.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def picture(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def has_ink(image: Image.Image) -> bool:
    """Something is drawn: the darkest pixel is far from white."""
    darkest, _ = ImageStat.Stat(image.convert("L")).extrema[0]
    return bool(darkest < 128)


def without_libreoffice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nothing = tmp_path / "no-programs"
    nothing.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(nothing))


async def test_each_page_of_a_pdf_is_a_picture_and_past_the_last_is_404(
    tmp_path: Path, sqlite_url: str
) -> None:
    data = pdf_bytes(["Page one.", "Page two.", "Page three."])
    async with service(settings_for(tmp_path, sqlite_url)) as client:
        file_id = (await upload(client, "manual.pdf", data)).json()["data"]["fileId"]
        info = (await client.get(f"/file/info/{file_id}")).json()["data"]
        pages = [await client.get(f"/file/preview/{file_id}?page={n}") for n in (1, 2, 3)]
        first_by_default = await client.get(f"/file/preview/{file_id}")
        past_the_end = await client.get(f"/file/preview/{file_id}?page=4")
        page_zero = await client.get(f"/file/preview/{file_id}?page=0")
        as_bob = await client.get(f"/file/preview/{file_id}?page=1", headers=BOB)

    assert info["pages"] == 3
    assert [r.status_code for r in pages] == [200, 200, 200]
    assert {r.headers["content-type"] for r in pages} == {"image/png"}
    images = [picture(r.content) for r in pages]
    assert {image.width for image in images} == {PAGE_WIDTH}
    assert all(has_ink(image) for image in images)
    assert len({r.content for r in pages}) == 3
    assert first_by_default.content == pages[0].content
    assert past_the_end.status_code == 404
    assert past_the_end.json() == {
        "code": 404,
        "message": "The file has 3 pages, not 4.",
        "data": None,
    }
    assert page_zero.status_code == 422
    # Another user's file is not found, never forbidden.
    assert as_bob.status_code == 404


async def test_office_files_are_drawn_once_through_libreoffice(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_binary("soffice", "LibreOffice (scripts/install-office)")
    workbook = xlsx_bytes({"Q1": [("region", "units"), ("North", 12)]})
    async with service(settings_for(tmp_path, sqlite_url)) as client:
        word = (await upload(client, "warranty.docx", two_page_docx())).json()["data"]["fileId"]
        sheet = (await upload(client, "sales.xlsx", workbook)).json()["data"]["fileId"]
        word_info = (await client.get(f"/file/info/{word}")).json()["data"]
        sheet_info = (await client.get(f"/file/info/{sheet}")).json()["data"]
        word_first = await client.get(f"/file/preview/{word}?page=1")
        sheet_first = await client.get(f"/file/preview/{sheet}?page=1")
        # LibreOffice gone: what was drawn is kept, and so is the PDF it made of the docx.
        without_libreoffice(tmp_path, monkeypatch)
        word_again = await client.get(f"/file/preview/{word}?page=1")
        word_second = await client.get(f"/file/preview/{word}?page=2")
        word_third = await client.get(f"/file/preview/{word}?page=3")

    assert (word_info["pages"], sheet_info["pages"]) == (2, 1)
    for response in (word_first, sheet_first, word_second):
        assert response.status_code == 200
        assert response.headers["content-type"] == "image/png"
        image = picture(response.content)
        assert image.width == PAGE_WIDTH
        assert has_ink(image)
    # A portrait page: the docx's first page is an A4 or Letter sheet.
    assert 1.2 < picture(word_first.content).height / PAGE_WIDTH < 1.5
    assert word_again.content == word_first.content
    assert word_second.content != word_first.content
    assert word_third.status_code == 404


async def test_an_image_is_its_own_preview_and_text_has_none(
    tmp_path: Path, sqlite_url: str
) -> None:
    png = image_bytes("PNG")
    async with service(settings_for(tmp_path, sqlite_url)) as client:
        image_id = (await upload(client, "photo.png", png)).json()["data"]["fileId"]
        text_id = (await upload(client, "notes.txt", b"Some notes.")).json()["data"]["fileId"]
        image_info = (await client.get(f"/file/info/{image_id}")).json()["data"]
        text_info = (await client.get(f"/file/info/{text_id}")).json()["data"]
        image_page = await client.get(f"/file/preview/{image_id}?page=1")
        image_second = await client.get(f"/file/preview/{image_id}?page=2")
        text_page = await client.get(f"/file/preview/{text_id}?page=1")

    assert (image_info["pages"], text_info["pages"]) == (1, None)
    assert image_page.content == png
    assert image_page.headers["content-type"] == "image/png"
    assert image_second.status_code == 404
    assert text_page.status_code == 415
    assert text_page.json()["message"] == "This type of file has no preview."


async def test_without_libreoffice_an_office_file_says_why_and_a_pdf_still_previews(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_libreoffice(tmp_path, monkeypatch)
    async with service(settings_for(tmp_path, sqlite_url)) as client:
        word = (await upload(client, "warranty.docx", two_page_docx())).json()["data"]["fileId"]
        pdf = (await upload(client, "manual.pdf", pdf_bytes(["One."]))).json()["data"]["fileId"]
        word_info = (await client.get(f"/file/info/{word}")).json()["data"]
        word_page = await client.get(f"/file/preview/{word}?page=1")
        pdf_page = await client.get(f"/file/preview/{pdf}?page=1")

    assert word_info["status"] == "ready"
    assert word_info["pages"] is None
    assert word_page.status_code == 503
    assert word_page.json()["message"].startswith("LibreOffice is not installed on the server")
    assert pdf_page.status_code == 200
    assert picture(pdf_page.content).width == PAGE_WIDTH


async def test_a_damaged_office_file_is_not_drawn(tmp_path: Path, sqlite_url: str) -> None:
    damaged = b"PK\x03\x04" + b"\x00" * 200
    async with service(settings_for(tmp_path, sqlite_url)) as client:
        file_id = (await upload(client, "broken.docx", damaged)).json()["data"]["fileId"]
        info = (await client.get(f"/file/info/{file_id}")).json()["data"]
        page = await client.get(f"/file/preview/{file_id}?page=1")

    assert (info["status"], info["pages"]) == ("failed", None)
    assert page.status_code == 422
    assert page.json()["message"].startswith("The file could not be read, so it has no preview.")


async def test_deleting_a_file_deletes_its_pictures(tmp_path: Path, sqlite_url: str) -> None:
    settings = settings_for(tmp_path, sqlite_url)
    async with service(settings) as client:
        data = pdf_bytes(["One.", "Two."])
        file_id = (await upload(client, "manual.pdf", data)).json()["data"]["fileId"]
        await client.get(f"/file/preview/{file_id}?page=2")
        kept = len(blobs(settings))
        await client.delete(f"/file/{file_id}")

    assert kept == 4  # the file, its page count, pages 1 (counting) and 2
    assert blobs(settings) == []


async def test_a_deck_previews_slide_by_slide(tmp_path: Path) -> None:
    """A .pptx (a generated deck; uploads of decks come with templates) is drawn per slide."""
    require_binary("soffice", "LibreOffice (scripts/install-office)")
    deck = Presentation()
    for title in ("Heat pumps", "Costs"):
        slide = deck.slides.add_slide(deck.slide_layouts[0])
        slide.shapes.title.text = title
    out = io.BytesIO()
    deck.save(out)
    store = LocalBlobStore(tmp_path / "files")
    await store.put("generated/deck", io.BytesIO(out.getvalue()), len(out.getvalue()))
    now = datetime.now(UTC)
    file = StoredFile(
        id="deck",
        user_id="u",
        file_name="deck.pptx",
        mime_type=PPTX_MIME,
        size=len(out.getvalue()),
        blob_key="generated/deck",
        status="ready",
        source="generated",
        create_time=now,
        update_time=now,
    )
    previews = FilePreviews(store, RenderLimits(1024 * 1024 * 1024, 60), workers=1)

    pages = await previews.page_count(file)
    second = await previews.page(file, 2)

    assert pages == 2
    image = picture(second.data)
    assert image.width == PAGE_WIDTH
    assert image.width > image.height  # a slide is landscape
    assert has_ink(image)


WAITING_SOFFICE = """#!/bin/sh
echo start >> "{log}"
i=0
while [ "$(grep -c start "{log}")" -lt 2 ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
echo end >> "{log}"
exit 1
"""
"""A stand-in LibreOffice that waits (up to 3 s) for a second one to start, then fails."""


@pytest.mark.parametrize(
    ("workers", "order"), [(1, "start end start end"), (2, "start start end end")]
)
async def test_at_most_preview_workers_draw_at_once(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch, workers: int, order: str
) -> None:
    programs, log = tmp_path / "bin", tmp_path / "soffice.log"
    programs.mkdir()
    (programs / "soffice").write_text(WAITING_SOFFICE.format(log=log))
    (programs / "soffice").chmod(0o755)
    monkeypatch.setenv("PATH", f"{programs}:{os.environ['PATH']}")
    settings = settings_for(tmp_path, sqlite_url, preview_workers=workers)
    async with service(settings) as client:
        ids = [
            (await upload(client, f"{name}.docx", two_page_docx())).json()["data"]["fileId"]
            for name in ("a", "b")
        ]
        pages = await asyncio.gather(*(client.get(f"/file/preview/{i}?page=1") for i in ids))

    assert [p.status_code for p in pages] == [422, 422]
    assert pages[0].json()["message"].startswith("LibreOffice could not convert the document")
    assert " ".join(log.read_text().split()) == order


async def test_drawing_past_the_reading_time_limit_is_422(tmp_path: Path, sqlite_url: str) -> None:
    settings = settings_for(tmp_path, sqlite_url, file_parse_seconds=30)
    async with service(settings) as client:
        file_id = (await upload(client, "a.pdf", pdf_bytes(["One."]))).json()["data"]["fileId"]
    # The same file, served again with a limit no child process can keep.
    hurried = settings_for(tmp_path, sqlite_url, file_parse_seconds=0.01)
    async with service(hurried) as client:
        page = await client.get(f"/file/preview/{file_id}?page=1")
        info = (await client.get(f"/file/info/{file_id}")).json()["data"]

    assert page.status_code == 422
    assert page.json()["message"] == (
        "Drawing the document took longer than 0.01 seconds, the limit."
    )
    assert info["pages"] is None
