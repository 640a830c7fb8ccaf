"""Scans and photos of pages are read by OCR (Tesseract) in the isolated reader.

Each test makes its scans: typed lines drawn into a picture by Pillow, and
for a PDF that picture as a page with no text layer, beside typed pages.
They are uploaded to the real service over HTTP; the file agent's passages
are checked to cite the right `#page=N`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from PIL import Image

from app.documents.extract import PDF, PNG, Budget, UnreadableFile
from app.documents.isolated import ParseLimits, extract_isolated
from app.documents.library import LibrarySettings
from app.documents.ocr import OcrSettings
from tests.conftest import require_binary, unavailable
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import ask, running_service, service_settings
from tests.integration.test_file_previews import has_ink, picture
from tests.support.documents import mixed_pdf_bytes, pillow_pdf_bytes, text_picture


@pytest.fixture(autouse=True)
def tesseract() -> None:
    require_binary("tesseract", "Tesseract (scripts/install-ocr)")


async def upload(client: httpx.AsyncClient, name: str, data: bytes) -> dict[str, Any]:
    response = await client.post("/file/upload", files={"file": (name, data)})
    assert response.status_code == 200, response.text
    file_id = response.json()["data"]["fileId"]
    info: dict[str, Any] = (await client.get(f"/file/info/{file_id}")).json()["data"]
    return info


async def content(client: httpx.AsyncClient, file_id: str) -> str:
    text: str = (await client.get(f"/file/content/{file_id}")).json()["data"]
    return text


async def test_a_photo_of_a_page_is_read_by_ocr(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    lines = ["The warranty of the pump lasts seven years.", "Frost damage is not covered."]
    settings = service_settings(tmp_path, sqlite_url, llm_base_url=fake_llm.base_url)
    async with running_service(settings) as client:
        png = await upload(client, "page.png", text_picture(lines))
        jpeg = await upload(client, "page.jpg", text_picture(lines, "JPEG"))
        texts = [await content(client, f["fileId"]) for f in (png, jpeg)]

    assert [(f["status"], f["ocr"]) for f in (png, jpeg)] == [("ready", True), ("ready", True)]
    for text in texts:
        assert "warranty of the pump lasts seven years" in text
        assert "Frost damage is not covered" in text


async def test_a_scan_saved_as_pdf_by_pillow_is_read_by_ocr_and_previewed(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Its content stream has no filter, which the unpacking check took for a damaged
    file: the scan was stored `failed`, never read, with no preview."""
    scan = pillow_pdf_bytes(["The warranty of the pump lasts seven years."])
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        info = await upload(client, "scan.pdf", scan)
        text = await content(client, info["fileId"])
        preview = await client.get(f"/file/preview/{info['fileId']}?page=1")

    assert (info["status"], info["ocr"], info["pages"]) == ("ready", True, 1)
    assert "warranty of the pump lasts seven years" in text
    assert preview.status_code == 200
    assert has_ink(picture(preview.content))


@pytest.fixture
def cjk_font() -> Path:
    """Debian's fonts-noto-cjk, which scripts/install-office installs."""
    font = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
    if not font.exists():
        unavailable(f"{font.name} (fonts-noto-cjk, scripts/install-office) is not installed")
    return font


async def test_a_photo_of_a_chinese_page_is_read_as_written(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI, cjk_font: Path
) -> None:
    """With `eng` leading (as `OCR_LANGS` has it), the first line came out as "ARAN
    RMERAtCE.": a page read as mostly Chinese is read again with Chinese leading."""
    lines = ["水泵的保修期为七年。", "霜冻造成的损坏不在保修范围内。"]
    settings = service_settings(tmp_path, sqlite_url, llm_base_url=fake_llm.base_url)
    async with running_service(settings) as client:
        photo = await upload(client, "page.png", text_picture(lines, font=cjk_font))
        text = await content(client, photo["fileId"])

    assert (photo["status"], photo["ocr"]) == ("ready", True)
    read = [line for line in text.splitlines() if line.strip()]
    # Tesseract may still miss a character: each line's gist is what must come through.
    for gist, line in zip(("保修期为七年", "霜冻造成的损坏"), read, strict=True):
        assert gist in line


async def test_a_chinese_line_is_read_as_written_on_a_chinese_or_an_english_page(
    tmp_path: Path, sqlite_url: str, cjk_font: Path
) -> None:
    """A heading-sized "量子计算 测试" came out "量子计算 Mist": alone, even read again with
    Chinese leading; under English lines, not read again (the page is not mostly Chinese).
    Each unsure Latin word on a line of Chinese ones is read again by Chinese alone."""
    english = ["The warranty of the pump lasts seven years.", "Frost damage is not covered."]
    line = text_picture(["量子计算 测试"], font=cjk_font, size=78)
    page = text_picture([*english, "量子计算 测试"], font=cjk_font, size=66)
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        alone = await content(client, (await upload(client, "line.png", line))["fileId"])
        beside = await content(client, (await upload(client, "page.png", page))["fileId"])

    assert alone == "量子计算测试"
    assert [line for line in beside.splitlines() if line.strip()] == [*english, "量子计算测试"]


async def test_a_pdf_with_typed_and_scanned_pages_gets_both_with_their_page_numbers(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    pages = [
        ("Chapter one: installing the pump.", False),
        ("The warranty lasts seven years.", True),
        ("Chapter three: servicing the pump, cleaning its filter, checking its pressure.", False),
        ("Frost damage voids the warranty.", True),
    ]
    fake_llm.script(
        Reply.tool_calls([("search_document", {"query": "frost damage warranty"})]),
        Reply.text("Frost damage voids it (page 4)."),
    )
    settings = service_settings(
        tmp_path,
        sqlite_url,
        llm_base_url=fake_llm.base_url,
        file_whole_text_chars=0,
        file_chunk_chars=100,
        file_chunk_overlap_chars=0,
    )
    async with running_service(settings) as client:
        info = await upload(client, "manual.pdf", mixed_pdf_bytes(pages))
        text = await content(client, info["fileId"])
        events = await ask(client, "Does frost void the warranty?", "c-ocr", "file", info["fileId"])

    assert (info["status"], info["ocr"]) == ("ready", True)
    parts = text.split("\n\n")
    assert parts[0] == "Chapter one: installing the pump."
    assert "warranty lasts seven years" in parts[1]
    assert parts[2] == pages[2][0]
    assert "Frost damage voids the warranty" in parts[3]
    [reference] = [e for e in events if e["type"] == "reference"]
    cited = orjson.loads(reference["content"])
    frost = next(r for r in cited if "Frost damage" in r["content"])
    assert "#page=4&" in frost["url"]
    assert events[-1]["status"] == "completed"


def limits(ocr: OcrSettings | None) -> ParseLimits:
    parsing = LibrarySettings.defaults().parsing
    return ParseLimits(parsing.budget, parsing.memory_bytes, parsing.seconds, ocr)


async def test_without_an_engine_or_past_the_page_limit_a_scan_is_unreadable(
    tmp_path: Path,
) -> None:
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(mixed_pdf_bytes([("Page one.", True), ("Page two.", True)]))
    photo = tmp_path / "photo.png"
    photo.write_bytes(text_picture(["A line of text."]))
    engine = OcrSettings("/usr/bin/tesseract", "eng", max_pages=1)

    with pytest.raises(UnreadableFile, match="not available: Tesseract is not installed"):
        await extract_isolated(scan, PDF, limits(OcrSettings("", "eng", 5)))
    with pytest.raises(UnreadableFile, match="not available: Tesseract is not installed"):
        await extract_isolated(photo, PNG, limits(OcrSettings("", "eng", 5)))
    with pytest.raises(UnreadableFile, match="more than 1 scanned pages"):
        await extract_isolated(scan, PDF, limits(engine))


async def test_a_picture_too_large_to_read_is_refused_before_ocr(tmp_path: Path) -> None:
    huge = tmp_path / "huge.png"
    Image.new("1", (8000, 6000), 1).save(huge)
    engine = OcrSettings("/usr/bin/tesseract", "eng", 5)
    tight = ParseLimits(Budget(10**8, 10, 10**6), 1024**3, 60.0, engine)

    with pytest.raises(UnreadableFile, match="8000x6000 pixels"):
        await extract_isolated(huge, PNG, tight)


async def test_languages_not_installed_are_named_and_the_installed_ones_read(
    tmp_path: Path, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    picture = text_picture(["The warranty lasts seven years."])
    async with running_service(service_settings(tmp_path, sqlite_url, ocr_langs="eng+tlh")) as c:
        some = await upload(c, "page.png", picture)
        text = await content(c, some["fileId"])
    async with running_service(service_settings(tmp_path, sqlite_url, ocr_langs="tlh")) as c:
        none = await upload(c, "other.png", picture)

    assert (some["status"], some["ocr"]) == ("ready", True)
    assert "seven years" in text
    assert "Tesseract does not have: tlh" in caplog.text
    assert (none["status"], none["ocr"]) == ("failed", False)
    assert none["error"].endswith("has none of its languages (OCR_LANGS) installed.")
