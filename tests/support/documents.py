"""Real documents for tests, written by real libraries: pdf (fpdf2), docx (python-docx),
xlsx (openpyxl), pptx (python-pptx), images.

Nothing here is a fixture file checked into the repo: each test makes the
document it reads, so what it contains is visible next to the assertion.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import docx
import pptx
from fpdf import FPDF
from openpyxl import Workbook
from PIL import Image, ImageDraw, ImageFont


def pdf_bytes(pages: Sequence[str], *, compress: bool = True) -> bytes:
    """A pdf with one page per string, as a text layer (what word processors export);
    `compress` False leaves its content streams unfiltered, as many simple generators do."""
    pdf = FPDF()
    pdf.compress = compress
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


def pillow_pdf_bytes(lines: Sequence[str]) -> bytes:
    """A one-page pdf of a picture of `lines`, as Pillow writes a scan: its content stream,
    which places the picture, has no filter."""
    out = io.BytesIO()
    Image.open(io.BytesIO(text_picture(lines))).save(out, "PDF", resolution=200)
    return out.getvalue()


def text_picture(
    lines: Sequence[str], kind: str = "PNG", font: Path | None = None, size: int = 40
) -> bytes:
    """A picture of typed lines, as a scanner or a phone makes of a page: black on white,
    `size` pixels high; in Pillow's own font, or in `font` (a CJK one for Chinese)."""
    face = ImageFont.truetype(font, size) if font else ImageFont.load_default(size=size)
    width = max(1600, 120 + max(int(face.getlength(line)) for line in lines))
    image = Image.new("RGB", (width, 3 * size + 2 * size * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    for n, line in enumerate(lines):
        draw.text((60, size * 3 // 2 + 2 * size * n), line, fill="black", font=face)
    out = io.BytesIO()
    image.save(out, kind)
    return out.getvalue()


def mixed_pdf_bytes(pages: Sequence[tuple[str, bool]]) -> bytes:
    """A pdf of pages, each `(text, scanned)`: typed (a text layer) or scanned (a picture
    of the text and nothing else), as a document with pages scanned in between."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text, scanned in pages:
        pdf.add_page()
        if scanned:
            picture = Image.open(io.BytesIO(text_picture([text])))
            pdf.image(picture, x=10, y=10, w=190)
        else:
            pdf.multi_cell(0, 6, text)
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


MB = 1024 * 1024


def docx_bomb_bytes(inflated_mb: int) -> bytes:
    """A Word document whose `word/document.xml` unpacks to `inflated_mb` MB of paragraphs."""
    paragraph = b"<w:p><w:r><w:t>boom boom boom boom</w:t></w:r></w:p>"
    source = docx_bytes(["Bomb"])
    return _office_bomb(source, "word/document.xml", b"w:body", paragraph, inflated_mb)


def xlsx_bomb_bytes(inflated_mb: int) -> bytes:
    """An Excel workbook whose first sheet unpacks to `inflated_mb` MB of rows."""
    row = b"<row><c><v>1</v></c></row>"
    source = xlsx_bytes({"Bomb": [["Bomb"]]})
    return _office_bomb(source, "xl/worksheets/sheet1.xml", b"sheetData", row, inflated_mb)


def pptx_bomb_bytes(inflated_mb: int) -> bytes:
    """A PowerPoint deck (a template) whose first layout unpacks to `inflated_mb` MB of shapes."""
    shape = b'<p:sp><p:nvSpPr><p:cNvPr id="99" name="boom"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr></p:sp>'
    shape = shape.ljust(1024)  # mostly blanks, so 300 MB of it packs under a megabyte
    source = io.BytesIO()
    pptx.Presentation().save(source)
    return _office_bomb(
        source.getvalue(), "ppt/slideLayouts/slideLayout1.xml", b"p:spTree", shape, inflated_mb
    )


def _office_bomb(
    source: bytes, member: str, element: bytes, unit: bytes, inflated_mb: int
) -> bytes:
    """`source` (a zip) with `member`'s `element` filled with `inflated_mb` MB of `unit`.

    Written a megabyte at a time, so building it costs the test no memory;
    it compresses about a thousandfold.
    """
    with zipfile.ZipFile(io.BytesIO(source)) as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    xml = parts.pop(member)
    opening = re.search(rb"<%b\s*/?>" % element, xml)
    assert opening is not None, f"no <{element.decode()}> in {member}"
    closing = b"</%b>" % element
    head = xml[: opening.start()] + b"<%b>" % element
    tail = xml[xml.index(closing) :] if closing in xml else closing + xml[opening.end() :]
    block = unit * (MB // len(unit))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
        with archive.open(member, "w", force_zip64=True) as part:
            part.write(head)
            for _ in range(inflated_mb):
                part.write(block)
            part.write(tail)
    return out.getvalue()


def pdf_bomb_bytes(inflated_mb: int) -> bytes:
    """A one-page pdf whose content stream is Flate that inflates to `inflated_mb` MB."""
    return _one_page_pdf(b"", _drawing_stream(inflated_mb))


def pdf_of_large_streams(streams: int, stream_mb: int, *, one_page: bool) -> bytes:
    """A pdf of `streams` content streams that inflate to `stream_mb` MB each: all drawing
    one page, or one page each. Each is under the unpacking budget; together they are not."""
    if one_page:
        refs = b" ".join(b"%d 0 R" % (4 + i) for i in range(streams))
        page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [%s] >>" % refs
        return _pdf_file(
            [
                b"<< /Type /Catalog /Pages 2 0 R >>",
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                page,
                *(_drawing_stream(stream_mb) for _ in range(streams)),
            ]
        )
    kids = b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(streams))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, streams),
    ]
    for number in range(streams):
        contents = 4 + 2 * number
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>" % contents
        )
        objects.append(_drawing_stream(stream_mb))
    return _pdf_file(objects)


def pdf_of_plain_and_packed_streams(plain_mb: int, packed_mb: int) -> bytes:
    """A one-page pdf drawn by two content streams: `plain_mb` MB unfiltered, then a Flate
    one that inflates to `packed_mb` MB."""
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [4 0 R 5 0 R] >>"
    return _pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            page,
            _drawing_stream(plain_mb, packed=False),
            _drawing_stream(packed_mb),
        ]
    )


def _drawing_stream(inflated_mb: int, *, packed: bool = True) -> bytes:
    """A content stream of line drawing that is `inflated_mb` MB: Flate, or (not `packed`)
    with no filter."""
    operators = b"0 0 m 1 1 l S\n" * (MB // 14)
    if not packed:
        stream = operators * inflated_mb
        return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    deflate = zlib.compressobj(9)
    stream = b"".join(deflate.compress(operators) for _ in range(inflated_mb)) + deflate.flush()
    return b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(stream), stream)


def pdf_nested_bytes(depth: int) -> bytes:
    """A one-page pdf whose page holds arrays nested `depth` deep: a parser that recurses
    per level runs out of stack long before the end."""
    text = b"BT /F1 12 Tf 72 712 Td (Nested) Tj ET"
    contents = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text)
    return _one_page_pdf(b" /Annots " + b"[" * depth + b"]" * depth, contents)


def _one_page_pdf(page_extra: bytes, contents: bytes) -> bytes:
    """A pdf of one page (its dictionary with `page_extra`) drawn by `contents`."""
    return _pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R%s >>"
            % page_extra,
            contents,
        ]
    )


def _pdf_file(objects: list[bytes]) -> bytes:
    """A pdf of `objects`, numbered from 1 (the first is the catalog), with its xref table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)
