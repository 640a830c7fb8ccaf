"""Reading a file's text: what only the isolated reader's process loads.

`extract` reads a file by its type (`extract.FileType`). pypdf, pdfium,
python-docx, openpyxl, Pillow and the OCR they feed are imported with this
module, so the server process, which only sniffs and stores files, never
holds them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import openpyxl
import pptx
import pypdf
import pypdfium2
from docx.text.paragraph import Paragraph
from pptx.enum.shapes import PP_PLACEHOLDER
from pptx.shapes.placeholder import LayoutPlaceholder
from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import LimitReachedError
from pypdf.filters import decode_stream_data
from pypdf.generic import ArrayObject, StreamObject, is_null_or_none

from app.documents.extract import (
    DOCX,
    PDF,
    PPTX,
    TEXT_PARAGRAPH_MAX_LINES,
    XLSX,
    Budget,
    Document,
    FileType,
    Section,
    UnreadableFile,
    bomb_reason,
    clean,
    decode_text,
)
from app.documents.ocr import DPI, OcrFailed, OcrSettings, led_by, recognise_file, recognise_image


def extract(
    path: Path, file_type: FileType, budget: Budget, ocr: OcrSettings | None = None
) -> Document:
    """The file's text in located sections; raises `UnreadableFile`.

    `ocr` None: no text recognition (turned off), so scans and pictures have no text.
    """
    if file_type.kind == "text":
        return _text(path, file_type, budget)
    if file_type.kind == "pdf":
        return _pdf(path, budget, ocr)
    if file_type.kind == "docx":
        return _docx(path, budget)
    if file_type.kind == "xlsx":
        return _xlsx(path, budget)
    if file_type.kind == "pptx":
        return _pptx(path, budget)
    return _image(path, file_type, budget, ocr)


def _no_ocr(ocr: OcrSettings | None) -> str | None:
    """Why text recognition cannot run, or None when it can."""
    if ocr is None:
        return "text recognition (OCR) is turned off"
    if not ocr.engine:
        return "text recognition (OCR) is not available: Tesseract is not installed"
    if not ocr.langs:
        return "text recognition (OCR) has none of its languages (OCR_LANGS) installed"
    return None


def _image(path: Path, file_type: FileType, budget: Budget, ocr: OcrSettings | None) -> Document:
    """A picture of text, read by OCR as one page."""
    missing = _no_ocr(ocr)
    if missing or ocr is None:
        raise UnreadableFile(f"This is {file_type.label}, and {missing}.")
    try:
        text = clean(recognise_file(ocr, path))
    except OcrFailed as exc:
        raise UnreadableFile(str(exc)) from exc
    budget.check_chars(len(text), file_type)
    if not text:
        raise UnreadableFile(f"No text could be recognised in this picture ({file_type.label}).")
    return Document("page", [Section(1, 1, text)], ocr=True)


def _pdf(path: Path, budget: Budget, ocr: OcrSettings | None = None) -> Document:
    try:
        # pypdf's own caps on what one stream may inflate to (75 MB each by default).
        with pypdf.apply_configuration(
            maximum_declared_stream_length=budget.inflated_bytes,
            zlib_maximum_output_length=budget.inflated_bytes,
            lzw_maximum_output_length=budget.inflated_bytes,
            run_length_maximum_output_length=budget.inflated_bytes,
            array_based_stream_maximum_output_length=budget.inflated_bytes,
        ):
            sections, scanned = _pdf_pages(path, PdfReader(path), budget, ocr)
    except (UnreadableFile, MemoryError):
        raise
    except LimitReachedError as exc:
        raise UnreadableFile(bomb_reason(PDF, budget)) from exc
    except Exception as exc:
        # A damaged pdf can make the parser raise nearly anything; all of it means the same.
        raise UnreadableFile("The PDF could not be read: the file may be damaged.") from exc
    if not sections:
        missing = _no_ocr(ocr)
        if missing:
            raise UnreadableFile(
                f"No text could be found in this PDF: it may be a scanned image, and {missing}."
            )
        raise UnreadableFile(
            "No text could be found in this PDF: it may be a scanned image with no legible "
            "text, in which text recognition (OCR) found none."
        )
    return Document("page", sections, ocr=bool(scanned))


def _pdf_pages(
    path: Path, reader: PdfReader, budget: Budget, ocr: OcrSettings | None
) -> tuple[list[Section], list[int]]:
    """Each page's text, read by OCR when it has no text layer (and OCR can run); the
    sections, and the numbers of the pages OCR read."""
    if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
        raise UnreadableFile("The PDF is protected by a password.")
    if len(reader.pages) > budget.pages:
        raise UnreadableFile(
            f"The PDF has {len(reader.pages):,} pages; at most {budget.pages:,} can be read."
        )
    sections: list[Section] = []
    scanned: list[int] = []
    rendered: pypdfium2.PdfDocument | None = None
    chars = 0
    try:
        for number, page in enumerate(reader.pages, 1):
            streams = _content_streams(page)
            _check_page_content(streams, budget)
            text = clean(page.extract_text() or "")
            # pypdf keeps each stream it decoded: let this page's go before the next page's
            # come, so a document costs one page's content at a time, not all of them.
            for stream in streams:
                stream.decoded_self = None
            if not text and _no_ocr(ocr) is None and ocr is not None and _draws_pictures(page):
                scanned.append(number)
                if len(scanned) > ocr.max_pages:
                    raise UnreadableFile(
                        f"The PDF has more than {ocr.max_pages:,} scanned pages; at most "
                        f"{ocr.max_pages:,} can be read by text recognition."
                    )
                rendered = rendered or pypdfium2.PdfDocument(str(path))
                text = clean(_recognise_page(rendered, number, ocr))
                # One document, one script: the pages after a Chinese one start Chinese-first.
                ocr = led_by(ocr, text)
            chars += len(text)
            budget.check_chars(chars, PDF)
            if text:
                sections.append(Section(number, number, text))
    finally:
        if rendered is not None:
            rendered.close()
    return sections, scanned


def _draws_pictures(page: PageObject, depth: int = 2) -> bool:
    """Whether the page places a picture (directly, or in a form it draws): a page of only
    lines and shapes is no scan, and is not rendered for OCR (a hostile one costs much)."""
    resources = page.get("/Resources")
    return _has_pictures(resources.get_object() if resources is not None else None, depth)


def _has_pictures(resources: object, depth: int) -> bool:
    if not isinstance(resources, dict) or "/XObject" not in resources:
        return False
    for item in resources["/XObject"].get_object().values():
        drawn = item.get_object()
        if not isinstance(drawn, dict):
            continue
        if drawn.get("/Subtype") == "/Image":
            return True
        if drawn.get("/Subtype") == "/Form" and depth > 0:
            inner = drawn.get("/Resources")
            if _has_pictures(inner.get_object() if inner is not None else None, depth - 1):
                return True
    return False


def _recognise_page(document: pypdfium2.PdfDocument, number: int, ocr: OcrSettings) -> str:
    """Page `number` (from 1) drawn at the OCR resolution and read; its bitmap let go at once."""
    page = document[number - 1]
    try:
        # pdfium draws at 72 points an inch.
        image = page.render(scale=DPI / 72).to_pil()
        try:
            return recognise_image(ocr, image)
        except OcrFailed as exc:
            raise UnreadableFile(f"Page {number}: {exc}") from exc
    finally:
        page.close()


def _content_streams(page: PageObject) -> list[StreamObject]:
    contents = page.get("/Contents")
    if contents is None:
        return []
    contents = contents.get_object()
    items = contents if isinstance(contents, ArrayObject) else [contents]
    return [stream for item in items if isinstance(stream := item.get_object(), StreamObject)]


def _check_page_content(streams: list[StreamObject], budget: Budget) -> None:
    """Refuse a page whose content streams unpack past the budget together.

    Each is unpacked and let go in turn, so measuring holds one stream at a
    time; pypdf, reading the page, holds them all and a copy of them joined.
    It also names the real reason: `extract_text` reads a stream over its
    limit as empty, which would blame the file for having no text.
    """
    inflated = 0
    for stream in streams:
        inflated += _unpacked_length(stream)
        if inflated > budget.inflated_bytes:
            raise UnreadableFile(bomb_reason(PDF, budget))


def _unpacked_length(stream: StreamObject) -> int:
    """An unfiltered stream (what Pillow writes for a scan, and many simple generators) is
    its own length: pypdf's decoder refuses it as an "Unsupported filter ()"."""
    if is_null_or_none(stream.get("/Filter")):
        return len(stream.get_data())
    return len(decode_stream_data(stream))


def _docx(path: Path, budget: Budget) -> Document:
    """Body paragraphs and table rows in document order, numbered as a reader counts them."""
    texts: list[str] = []
    try:
        _check_unpacked(path, DOCX, budget)
        for block in docx.Document(str(path)).iter_inner_content():
            if isinstance(block, Paragraph):
                texts.append(block.text)
            else:
                texts.extend(
                    " | ".join(dict.fromkeys(cell.text.strip() for cell in row.cells))
                    for row in block.rows
                )
    except (UnreadableFile, MemoryError):
        raise
    except Exception as exc:
        raise UnreadableFile("The Word document could not be read: it may be damaged.") from exc
    budget.check_chars(sum(map(len, texts)), DOCX)
    paragraphs = [t for t in map(clean, texts) if t]
    if not paragraphs:
        raise UnreadableFile("The Word document contains no text.")
    return Document("paragraph", [Section(n, n, t) for n, t in enumerate(paragraphs, 1)])


def _xlsx(path: Path, budget: Budget) -> Document:
    """Each sheet's rows as tab-separated lines, under the sheet's name, numbered across sheets."""
    sections: list[Section] = []
    number = 0
    chars = 0
    try:
        _check_unpacked(path, XLSX, budget)
        # A file object: openpyxl refuses a path that does not end in .xlsx (blob keys do not).
        with path.open("rb") as handle:
            book = openpyxl.load_workbook(handle, read_only=True, data_only=True)
            try:
                for sheet in book.worksheets:
                    rows: list[tuple[int, str]] = []
                    for values in sheet.iter_rows(values_only=True):
                        number += 1
                        line = clean("\t".join("" if v is None else str(v) for v in values))
                        chars += len(line)
                        budget.check_chars(chars, XLSX)
                        if line:
                            rows.append((number, line))
                    for at in range(0, len(rows), TEXT_PARAGRAPH_MAX_LINES):
                        block = rows[at : at + TEXT_PARAGRAPH_MAX_LINES]
                        text = "\n".join([f"[{sheet.title}]", *(line for _, line in block)])
                        sections.append(Section(block[0][0], block[-1][0], text))
            finally:
                book.close()
    except (UnreadableFile, MemoryError):
        raise
    except Exception as exc:
        raise UnreadableFile("The Excel workbook could not be read: it may be damaged.") from exc
    if not sections:
        raise UnreadableFile("The Excel workbook contains no data.")
    return Document("row", sections)


def _pptx(path: Path, budget: Budget) -> Document:
    """Each slide's text, one section a slide; a deck with none (a template) has no sections."""
    sections: list[Section] = []
    chars = 0
    try:
        _check_unpacked(path, PPTX, budget)
        deck = pptx.Presentation(str(path))
        for number, slide in enumerate(deck.slides, 1):
            if number > budget.pages:
                raise UnreadableFile(f"This is {PPTX.label} of more than {budget.pages} slides.")
            texts = [shape.text_frame.text for shape in slide.shapes if shape.has_text_frame]
            text = clean("\n".join(t for t in texts if t.strip()))
            chars += len(text)
            budget.check_chars(chars, PPTX)
            if text:
                sections.append(Section(number, number, text))
    except (UnreadableFile, MemoryError):
        raise
    except Exception as exc:
        raise UnreadableFile("The PowerPoint deck could not be read: it may be damaged.") from exc
    return Document("page", sections)


def layouts(path: Path, budget: Budget) -> dict[str, object]:
    """A deck's slide size and every layout of every master with its placeholders, as JSON.

    What the deck builder matches its slide kinds to (agents/pptx/layouts.py).
    Positions are EMU; a placeholder's kind is `title`, `subtitle`, `body`
    (text or any content), `picture`, or `other`. Only the placeholders a new
    slide gets are listed (not date, footer or slide number), and `idx` is a
    placeholder's place among them, which is its place on a slide made from
    the layout: the file's own `idx` cannot name it (LibreOffice writes none,
    so every one is 0).
    """
    try:
        _check_unpacked(path, PPTX, budget)
        deck = pptx.Presentation(str(path))
        found = []
        for master_number, master in enumerate(deck.slide_masters):
            for layout_number, layout in enumerate(master.slide_layouts):
                placeholders = [
                    {
                        "kind": _placeholder_kind(shape),
                        "idx": number,
                        "box": [
                            shape.left or 0,
                            shape.top or 0,
                            shape.width or 0,
                            shape.height or 0,
                        ],
                    }
                    for number, shape in enumerate(layout.iter_cloneable_placeholders())
                ]
                found.append(
                    {
                        "master": master_number,
                        "index": layout_number,
                        "name": layout.name,
                        "placeholders": placeholders,
                    }
                )
    except (UnreadableFile, MemoryError):
        raise
    except Exception as exc:
        raise UnreadableFile("The PowerPoint deck could not be read: it may be damaged.") from exc
    return {"width": deck.slide_width, "height": deck.slide_height, "layouts": found}


_PLACEHOLDER_KINDS = {
    PP_PLACEHOLDER.TITLE: "title",
    PP_PLACEHOLDER.CENTER_TITLE: "title",
    PP_PLACEHOLDER.SUBTITLE: "subtitle",
    PP_PLACEHOLDER.BODY: "body",
    PP_PLACEHOLDER.OBJECT: "body",
    PP_PLACEHOLDER.CHART: "body",
    PP_PLACEHOLDER.TABLE: "body",
    PP_PLACEHOLDER.PICTURE: "picture",
}
"""What the deck builder can put in each kind of placeholder."""


def _placeholder_kind(shape: LayoutPlaceholder) -> str:
    """Its kind; a vertical one (East Asian vertical text) is `other`: no deck slide fits it."""
    ph = shape._element.ph
    if ph is not None and ph.get("orient") == "vert":
        return "other"
    return _PLACEHOLDER_KINDS.get(shape.placeholder_format.type, "other")


def _check_unpacked(path: Path, file_type: FileType, budget: Budget) -> None:
    """Refuse an Office file whose parts would unpack past the budget, before any is unpacked.

    The sizes the zip declares bind: `zipfile` reads no byte past them.
    """
    with zipfile.ZipFile(path) as archive:
        inflated = sum(info.file_size for info in archive.infolist())
    if inflated > budget.inflated_bytes:
        raise UnreadableFile(bomb_reason(file_type, budget))


def _text(path: Path, file_type: FileType, budget: Budget) -> Document:
    text = decode_text(path.read_bytes())
    if text is None:
        raise UnreadableFile(f"The encoding of {file_type.label} could not be recognised.")
    budget.check_chars(len(text), file_type)
    sections: list[Section] = []
    block: list[str] = []
    first = 1
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, 1):
        if line.strip():
            if not block:
                first = number
            block.append(line.rstrip())
        if block and (not line.strip() or len(block) == TEXT_PARAGRAPH_MAX_LINES):
            sections.append(Section(first, first + len(block) - 1, "\n".join(block)))
            block = []
    if block:
        sections.append(Section(first, first + len(block) - 1, "\n".join(block)))
    if not sections:
        raise UnreadableFile(f"This is {file_type.label} with no text in it.")
    return Document("line", sections)
