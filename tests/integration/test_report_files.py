"""A finished research report handed over as files: opened as a reader would open them.

A real deep research turn runs on the scripted model (tests/support/research.py)
and the Tavily fake; its report is Markdown with headings, a list, a table and
a link. The .docx is read with python-docx and the PDF with pypdf, both
downloaded from the service as a user would.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, cast

import docx
import orjson
import pypdf
import pytest
from PIL import Image

from tests.conftest import require_binary
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import Backend, history
from tests.integration.test_deep_research import INDEPENDENT, ask, deep_settings, research_service
from tests.support.research import Researcher, step_of
from tests.support.scripted_model import ModelRequest, Reply

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
QUESTION = "How big is the heat pump market?"
REPORT = """# Heat pumps in Europe

Heat pumps are **growing** [1], and cheap to run [3]; see [the agency's data](https://agency.example/data).

## Market size

1. Sales doubled.
2. Prices fell.

| Region | Share |
| --- | --- |
| North | 40% |
| South | 35% |

## Running costs

- Electricity
- Maintenance
"""
SOURCES = [
    "https://example.test/Market-size/1",
    "https://example.test/Market-size/2",
    "https://example.test/Running-costs/1",
    "https://example.test/Running-costs/2",
]
CHINESE_QUESTION = "热泵市场有多大？"
CHINESE_REPORT = (
    "# 欧洲热泵市场\n\n热泵销量增长迅速[1]，运行成本低廉[3]。\n\n## 市场规模\n\n- 销量翻倍\n"
)


class Reporting(Researcher):
    """The research of tests/support/research.py, with a report of the test's own."""

    def __init__(self, report: str) -> None:
        super().__init__(orjson.dumps(INDEPENDENT).decode())
        self.report = report

    async def answer(self, request: ModelRequest) -> Reply | str:
        if step_of(request) == "report":
            self.calls["report"] += 1
            return self.report
        return await super().answer(request)


def stored_files(data_dir: Path) -> list[Path]:
    return [p for p in (data_dir / "files").rglob("*") if p.is_file()]


def flattened(outline: list[Any]) -> list[str]:
    """An outline's titles in reading order, nested ones after their parent."""
    titles: list[str] = []
    for item in outline:
        titles += flattened(item) if isinstance(item, list) else [str(item["/Title"])]
    return titles


def files_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in e.items() if k != "type" and not k.startswith("_")}
        for e in events
        if e["type"] == "file"
    ]


async def test_a_finished_report_comes_as_a_word_document_and_its_pdf(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    require_binary("soffice", "LibreOffice (scripts/install-office)")
    settings = deep_settings(backend, tmp_path, fake_search, deep_report_formats="docx,pdf")
    async with research_service(settings, Reporting(REPORT)) as client:
        events = await ask(client, QUESTION, "c-files")
        [stored] = await history(client, "c-files")
        files = files_of(events)
        downloads = [(await client.get(f["url"])).content for f in files]
        infos = [(await client.get(f"/file/info/{f['fileId']}")).json()["data"] for f in files]
        first_page = await client.get(f"/file/preview/{files[1]['fileId']}?page=1")

    assert events[-1]["status"] == "completed"
    assert "".join(e["content"] for e in events if e["type"] == "text") == REPORT
    assert [(f["name"], f["mimeType"]) for f in files] == [
        ("How big is the heat pump market.docx", DOCX_MIME),
        ("How big is the heat pump market.pdf", "application/pdf"),
    ]
    assert [f["size"] for f in files] == [len(d) for d in downloads]
    assert stored["files"] == files
    assert [(i["source"], i["status"]) for i in infos] == [("generated", "ready")] * 2

    document = docx.Document(io.BytesIO(downloads[0]))
    paragraphs = [(p.style.name if p.style else "", p.text) for p in document.paragraphs]
    # The title page: the question, then what it is and the day it was written.
    assert paragraphs[0] == ("Title", QUESTION)
    assert paragraphs[1][0] == "Subtitle"
    assert paragraphs[1][1].startswith("Research report · 20")
    headings = [(style, text) for style, text in paragraphs if style.startswith("Heading")]
    assert headings == [
        ("Heading 1", "Heat pumps in Europe"),
        ("Heading 2", "Market size"),
        ("Heading 2", "Running costs"),
        ("Heading 1", "References"),
    ]
    assert ("List Number", "Sales doubled.") in paragraphs
    assert ("List Bullet", "Maintenance") in paragraphs
    [table] = document.tables
    assert [[c.text for c in row.cells] for row in table.rows] == [
        ["Region", "Share"],
        ["North", "40%"],
        ["South", "35%"],
    ]
    assert all(run.bold for run in table.rows[0].cells[0].paragraphs[0].runs)
    # The numbered references end it, each with its link, as the report cites them.
    references = [text for _, text in paragraphs[paragraphs.index(headings[-1]) + 1 :]]
    assert [r.split(" ")[0] for r in references] == ["[1]", "[2]", "[3]", "[4]"]
    assert [r.rsplit(" ", 1)[-1] for r in references] == SOURCES
    links = {r.target_ref for r in document.part.rels.values() if r.is_external}
    assert links == {*SOURCES, "https://agency.example/data"}

    pdf = pypdf.PdfReader(io.BytesIO(downloads[1]))
    # Lines as the PDF broke them, joined: the title wraps.
    pages = [" ".join(page.extract_text().split()) for page in pdf.pages]
    assert len(pages) == 2
    assert infos[1]["pages"] == 2
    assert QUESTION in pages[0]
    for line in ("Heat pumps in Europe", "Market size", "References", SOURCES[3]):
        assert line in pages[1]
    assert "[3] Running costs result 1" in pages[1]
    # Its headings are the PDF's outline, for a reader's table of contents.
    outline = flattened(pdf.outline)
    assert outline == ["Heat pumps in Europe", "Market size", "Running costs", "References"]
    # A generated file previews as an uploaded one does.
    assert first_page.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(first_page.content)).width == 1000


async def test_a_chinese_report_is_readable_in_its_pdf(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    require_binary("soffice", "LibreOffice (scripts/install-office)")
    backend = Backend(sqlite_url, "", "")
    settings = deep_settings(backend, tmp_path, fake_search, deep_report_formats="pdf")
    async with research_service(settings, Reporting(CHINESE_REPORT)) as client:
        events = await ask(client, CHINESE_QUESTION, "c-zh")
        [pdf_file] = files_of(events)
        data = (await client.get(pdf_file["url"])).content
        preview = await client.get(f"/file/preview/{pdf_file['fileId']}?page=2")
        kept = stored_files(settings.data_dir)
        deleted = await client.delete("/session/c-zh")

    assert pdf_file["name"] == "热泵市场有多大.pdf"
    reader = pypdf.PdfReader(io.BytesIO(data))
    first, second = (page.extract_text() for page in reader.pages)
    assert CHINESE_QUESTION in first
    assert "研究报告" in first
    assert "欧洲热泵市场" in second
    assert "热泵销量增长迅速[1]，运行成本低廉[3]。" in second
    assert "参考文献" in second
    # Drawn in a font that has the glyphs, embedded: not boxes, not a font the reader lacks.
    fonts = set()
    for page in reader.pages:
        resources = cast(pypdf.generic.DictionaryObject, page["/Resources"])
        used = cast(pypdf.generic.DictionaryObject, resources["/Font"])
        fonts |= {str(font.get_object()["/BaseFont"]) for font in used.values()}
    assert any("NotoSansCJK" in name for name in fonts)
    # The conversation takes its files with it, and what their previews kept.
    assert preview.headers["content-type"] == "image/png"
    assert len(kept) == 4  # the pdf, its page count, pages 1 (counting) and 2
    assert deleted.status_code == 200
    assert stored_files(settings.data_dir) == []


async def test_without_libreoffice_the_word_document_comes_and_the_pdf_says_why_not(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily, monkeypatch: pytest.MonkeyPatch
) -> None:
    nothing = tmp_path / "no-programs"
    nothing.mkdir()
    monkeypatch.setenv("PATH", str(nothing))
    backend = Backend(sqlite_url, "", "")
    settings = deep_settings(backend, tmp_path, fake_search, deep_report_formats="docx,pdf")
    async with research_service(settings, Reporting(REPORT)) as client:
        events = await ask(client, QUESTION, "c-no-office")
        [stored] = await history(client, "c-no-office")
        docx_file, pdf_file = files_of(events)
        word = await client.get(docx_file["url"])
        pdf_info = (await client.get(f"/file/info/{pdf_file['fileId']}")).json()["data"]
        pdf_download = await client.get(pdf_file["url"])

    assert events[-1]["status"] == "completed"
    assert stored["status"] == "completed"
    assert stored["answer"] == REPORT
    assert len(orjson.loads(next(e for e in events if e["type"] == "reference")["content"])) == 4
    assert "status" not in docx_file
    assert docx.Document(io.BytesIO(word.content)).paragraphs[0].text == QUESTION
    reason = "No PDF was made: LibreOffice is not installed on the server"
    assert pdf_file["status"] == "failed"
    assert pdf_file["error"].startswith(reason)
    assert pdf_file["size"] == 0
    assert stored["files"] == [docx_file, pdf_file]
    assert (pdf_info["status"], pdf_info["pages"]) == ("failed", None)
    assert pdf_info["error"] == pdf_file["error"]
    assert pdf_download.status_code == 404


async def test_report_formats_choose_the_files(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    backend = Backend(sqlite_url, "", "")
    only_word = deep_settings(backend, tmp_path, fake_search, deep_report_formats="docx")
    async with research_service(only_word, Reporting(REPORT)) as client:
        word = files_of(await ask(client, QUESTION, "c-word"))
    none = deep_settings(backend, tmp_path, fake_search, deep_report_formats="none")
    async with research_service(none, Reporting(REPORT)) as client:
        nothing = files_of(await ask(client, QUESTION, "c-none"))

    assert [f["mimeType"] for f in word] == [DOCX_MIME]
    assert nothing == []
