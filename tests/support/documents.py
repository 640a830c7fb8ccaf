"""Real documents for tests, written by real libraries: pdf (fpdf2), docx (python-docx),
xlsx (openpyxl), images.

Nothing here is a fixture file checked into the repo: each test makes the
document it reads, so what it contains is visible next to the assertion.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import docx
from fpdf import FPDF
from openpyxl import Workbook
from PIL import Image


def pdf_bytes(pages: Sequence[str]) -> bytes:
    """A pdf with one page per string, as a text layer (what word processors export)."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def scanned_pdf_bytes(pages: int = 2) -> bytes:
    """A pdf whose pages are only pictures, as a scanner makes: no text layer at all."""
    pdf = FPDF()
    for _ in range(pages):
        pdf.add_page()
        pdf.image(Image.new("RGB", (300, 400), "white"), x=10, y=10, w=150)
    return bytes(pdf.output())


def docx_bytes(paragraphs: Sequence[str], table: Sequence[Sequence[str]] = ()) -> bytes:
    """A Word document: a heading, the paragraphs, then the table's rows (if any)."""
    document = docx.Document()
    document.add_heading("Test document", level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for row, values in zip(grid.rows, table, strict=True):
            for cell, value in zip(row.cells, values, strict=True):
                cell.text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_bytes(sheets: dict[str, Sequence[Sequence[object]]]) -> bytes:
    """An Excel workbook with these sheets, in order, each a list of rows."""
    book = Workbook()
    book.remove(book.worksheets[0])
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(list(row))
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def image_bytes(kind: str = "PNG") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(out, kind)
    return out.getvalue()
