"""Type checks and text extraction on real files the tests write (pdf, docx, text, images)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from app.documents.extract import (
    DOCX,
    JPEG,
    MARKDOWN,
    PDF,
    PNG,
    TEXT,
    XLSX,
    FileType,
    UnreadableFile,
    content_matches,
    type_for_name,
)
from app.documents.library import LibrarySettings
from app.documents.ocr import OcrSettings
from app.documents.readers import extract
from tests.support.documents import (
    docx_bytes,
    image_bytes,
    pdf_bytes,
    scanned_pdf_bytes,
    xlsx_bytes,
)

BUDGET = LibrarySettings.defaults().parsing.budget
"""The service's default budget."""


def write(tmp_path: Path, data: bytes, name: str = "file") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_types_come_from_the_extension_case_insensitively() -> None:
    assert type_for_name("Report.PDF") is PDF
    assert type_for_name("notes.markdown") is MARKDOWN
    assert type_for_name("photo.jpeg") is JPEG
    assert type_for_name("archive.zip") is None
    assert type_for_name("no-extension") is None


def test_pdf_text_comes_out_per_page(tmp_path: Path) -> None:
    path = write(tmp_path, pdf_bytes(["Apples grow on trees.", "", "Pumps move water."]))

    document = extract(path, PDF, BUDGET)

    assert document.unit == "page"
    assert [(s.first, s.last, s.text) for s in document.sections] == [
        (1, 1, "Apples grow on trees."),
        (3, 3, "Pumps move water."),
    ]


def test_a_scanned_pdf_says_it_has_no_text(tmp_path: Path) -> None:
    path = write(tmp_path, scanned_pdf_bytes())

    assert content_matches(path, PDF)
    with pytest.raises(UnreadableFile, match=r"scanned image, and text recognition \(OCR\) is"):
        extract(path, PDF, BUDGET)
    without_engine = OcrSettings(engine="", langs="eng", max_pages=5)
    with pytest.raises(UnreadableFile, match="not available: Tesseract is not installed"):
        extract(path, PDF, BUDGET, without_engine)


def test_a_damaged_pdf_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, pdf_bytes(["Some text."])[:300])

    with pytest.raises(UnreadableFile, match="could not be read: the file may be damaged"):
        extract(path, PDF, BUDGET)


def test_docx_paragraphs_and_table_rows_are_numbered_in_order(tmp_path: Path) -> None:
    table = [["Model", "Years"], ["X1", "7"]]
    data = docx_bytes(["First point.", "", "Second point."], table=table)
    path = write(tmp_path, data)

    assert content_matches(path, DOCX)
    document = extract(path, DOCX, BUDGET)

    assert document.unit == "paragraph"
    assert [(s.first, s.text) for s in document.sections] == [
        (1, "Test document"),
        (2, "First point."),
        (3, "Second point."),
        (4, "Model | Years"),
        (5, "X1 | 7"),
    ]


def test_a_damaged_docx_is_a_docx_that_cannot_be_read(tmp_path: Path) -> None:
    path = write(tmp_path, docx_bytes(["Text."])[:200])

    assert content_matches(path, DOCX)
    with pytest.raises(UnreadableFile, match="Word document could not be read"):
        extract(path, DOCX, BUDGET)


def test_a_damaged_workbook_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, xlsx_bytes({"Sheet": [("a", 1)]})[:300])

    assert content_matches(path, XLSX)
    with pytest.raises(UnreadableFile, match="Excel workbook could not be read"):
        extract(path, XLSX, BUDGET)


def test_a_zip_that_is_not_a_word_document_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fake.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("hello.txt", "hello")

    assert not content_matches(path, DOCX)


def test_workbook_rows_come_out_per_sheet_numbered_across_sheets(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        xlsx_bytes(
            {
                "Sales": [("region", "units"), ("North", 12), (None, None), ("South", 7)],
                "Notes": [("Checked by Ana",)],
            }
        ),
    )

    document = extract(path, XLSX, BUDGET)

    assert content_matches(path, XLSX)
    assert not content_matches(write(tmp_path, docx_bytes(["Text."]), "w.xlsx"), XLSX)
    assert document.unit == "row"
    assert [(s.first, s.last, s.text) for s in document.sections] == [
        (1, 4, "[Sales]\nregion\tunits\nNorth\t12\nSouth\t7"),
        (5, 5, "[Notes]\nChecked by Ana"),
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"Plain ASCII text.", "Plain ASCII text."),
        ("Résumé – naïve café ✓".encode(), "Résumé – naïve café ✓"),
        ("Résumé with BOM".encode("utf-8-sig"), "Résumé with BOM"),
        ("UTF-16 with BOM: ünïcode".encode("utf-16"), "UTF-16 with BOM: ünïcode"),
        (
            "本产品的保修期为七年，请妥善保管购买凭证。如有问题请联系客服中心。".encode("gb18030"),
            "本产品的保修期为七年，请妥善保管购买凭证。如有问题请联系客服中心。",
        ),
    ],
    ids=["ascii", "utf-8", "utf-8-bom", "utf-16", "gb18030"],
)
def test_text_encodings_are_detected(tmp_path: Path, data: bytes, expected: str) -> None:
    path = write(tmp_path, data)

    assert content_matches(path, TEXT)
    assert extract(path, TEXT, BUDGET).text == expected


def test_text_sections_carry_line_numbers(tmp_path: Path) -> None:
    lines = ["# Title", "", "First paragraph,", "two lines.", "", "", *[f"l{i}" for i in range(25)]]
    path = write(tmp_path, "\r\n".join(lines).encode())

    document = extract(path, MARKDOWN, BUDGET)

    assert document.unit == "line"
    assert [(s.first, s.last) for s in document.sections] == [(1, 1), (3, 4), (7, 26), (27, 31)]
    assert document.sections[1].text == "First paragraph,\ntwo lines."


@pytest.mark.parametrize(
    ("data", "claimed"),
    [
        (image_bytes("PNG"), TEXT),
        (image_bytes("PNG"), PDF),
        (image_bytes("JPEG"), PNG),
        (pdf_bytes(["x"]), TEXT),
        (pdf_bytes(["x"]), DOCX),
        (b"\x00\x01\x02\x03binary\x00\xff\xfe\x00", TEXT),
        (b"just text", PDF),
    ],
    ids=["png-as-text", "png-as-pdf", "jpeg-as-png", "pdf-as-text", "pdf-as-docx", "bin", "txt"],
)
def test_content_that_is_not_what_the_name_says_is_refused(
    tmp_path: Path, data: bytes, claimed: FileType
) -> None:
    assert not content_matches(write(tmp_path, data), claimed)


def test_images_are_recognised_but_have_no_text_without_ocr(tmp_path: Path) -> None:
    png = write(tmp_path, image_bytes("PNG"), "a.png")
    jpeg = write(tmp_path, image_bytes("JPEG"), "a.jpg")

    assert content_matches(png, PNG)
    assert content_matches(jpeg, JPEG)
    with pytest.raises(UnreadableFile, match=r"a PNG image, and text recognition \(OCR\) is"):
        extract(png, PNG, BUDGET)
