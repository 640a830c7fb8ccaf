"""Reading uploaded documents: what a file really is, and its text with locations.

A file's type is decided by its name and confirmed by its content (magic
bytes; for docx and xlsx, the zip's `word/document.xml` or `xl/workbook.xml`;
for text, that it decodes),
so a renamed binary is refused rather than stored as something it is not.
Text comes out in sections that know where they are (page of a pdf,
paragraph of a docx, lines of a text file, rows of a workbook's sheets), so an
answer can cite them.

Everything here blocks (parsers read whole files): `extract` runs in a
child process with limits (documents/isolated.py), and reads within a
`Budget` (bytes inflated, pages, characters) so a decompression bomb stops
at the budget rather than at the memory limit. A file that is what it
claims but yields no text (a damaged file, a bomb, a scan when OCR is off
or not installed) raises `UnreadableFile` with a sentence a user
understands; the upload is then kept with status `failed`.

With OCR (documents/ocr.py, Tesseract), a PNG or JPEG is read as one page,
and each PDF page without a text layer is rendered and read, so a PDF with
some typed and some scanned pages gets both, each under its own number;
`Document.ocr` says whether any text came that way.

Left out: image description (no vision model), legacy .doc and .xls,
slides, formulas (a workbook's cached values are read), and pdf/docx
headers and footers.
"""

from __future__ import annotations

import codecs
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Literal

import charset_normalizer
import docx
import openpyxl
import pypdf
import pypdfium2
from docx.text.paragraph import Paragraph
from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import LimitReachedError
from pypdf.filters import decode_stream_data
from pypdf.generic import ArrayObject, StreamObject

from app.documents.ocr import DPI, OcrFailed, OcrSettings, recognise_file, recognise_image

SNIFF_BYTES = 64 * 1024
DETECT_BYTES = 256 * 1024
PDF_HEADER_WITHIN = 1024
"""Readers accept `%PDF-` anywhere in the first kilobyte, after junk some writers prepend."""

Kind = Literal["pdf", "docx", "xlsx", "text", "image"]
Unit = Literal["page", "paragraph", "line", "row"]


@dataclass(frozen=True, slots=True)
class FileType:
    kind: Kind
    mime_type: str
    label: str
    """How a sentence names it: "a PDF document"."""
    unit: Unit
    """What a location in it counts."""


PDF = FileType("pdf", "application/pdf", "a PDF document", "page")
DOCX = FileType(
    "docx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "a Word document",
    "paragraph",
)
TEXT = FileType("text", "text/plain", "a text file", "line")
MARKDOWN = FileType("text", "text/markdown", "a Markdown file", "line")
CSV = FileType("text", "text/csv", "a CSV file", "line")
TSV = FileType("text", "text/tab-separated-values", "a TSV file", "line")
XLSX = FileType(
    "xlsx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "an Excel workbook",
    "row",
)
PNG = FileType("image", "image/png", "a PNG image", "page")
JPEG = FileType("image", "image/jpeg", "a JPEG image", "page")

TYPES_BY_EXTENSION: dict[str, FileType] = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".txt": TEXT,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".csv": CSV,
    ".tsv": TSV,
    ".xlsx": XLSX,
    ".png": PNG,
    ".jpg": JPEG,
    ".jpeg": JPEG,
}

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_SIGNATURE = b"\xff\xd8\xff"
_ZIP_SIGNATURE = b"PK\x03\x04"
_BINARY_SIGNATURES = (_PNG_SIGNATURE, _JPEG_SIGNATURE, _ZIP_SIGNATURE, b"%PDF-")
_TEXT_PARAGRAPH_MAX_LINES = 20
"""A text paragraph longer than this is cut into sections, so its locations stay precise."""


class UnreadableFile(Exception):
    """The file is what it claims to be, but no text can be had from it; `str()` says why."""


@dataclass(frozen=True, slots=True)
class Budget:
    """How much one document may cost to read: a real document stays far below each.

    No defaults: the settings give them (`LibrarySettings.parsing`), and this module,
    run in the reading child, stays clear of the settings' imports."""

    inflated_bytes: int
    """Bytes a docx's parts, or one pdf page's content streams together, may unpack to."""
    pages: int
    chars: int
    """Characters of text the whole document may yield."""

    def check_chars(self, count: int, file_type: FileType) -> None:
        if count > self.chars:
            raise UnreadableFile(
                f"This is {file_type.label} with more than {self.chars:,} characters of text, "
                "more than can be read."
            )


@dataclass(frozen=True, slots=True)
class Section:
    first: int
    last: int
    """The units it spans, from 1."""
    text: str


@dataclass(frozen=True, slots=True)
class Document:
    unit: Unit
    sections: list[Section]
    ocr: bool = False
    """Some of the text was read by OCR (a scanned page, a picture)."""

    @property
    def text(self) -> str:
        return "\n\n".join(s.text for s in self.sections)


def type_for_name(name: str) -> FileType | None:
    return TYPES_BY_EXTENSION.get(PurePath(name).suffix.lower())


def content_matches(path: Path, expected: FileType) -> bool:
    """Whether the bytes are what the name says.

    A docx or xlsx whose zip cannot be opened passes (it starts like one): it
    is a damaged Office file, which extraction then reports as such.
    """
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if expected is PDF:
        return b"%PDF-" in head[:PDF_HEADER_WITHIN]
    if expected is DOCX:
        return _zip_holds(path, head, "word/document.xml")
    if expected is XLSX:
        return _zip_holds(path, head, "xl/workbook.xml")
    if expected is PNG:
        return head.startswith(_PNG_SIGNATURE)
    if expected is JPEG:
        return head.startswith(_JPEG_SIGNATURE)
    if head.startswith(_BINARY_SIGNATURES):
        return False
    return _encoding_of(head, complete=len(head) < SNIFF_BYTES) is not None


def extract(
    path: Path, file_type: FileType, budget: Budget, ocr: OcrSettings | None = None
) -> Document:
    """The file's text in located sections; raises `UnreadableFile`.

    `ocr` None: no text recognition (turned off), so scans and pictures have no text.
    """
    if file_type.kind == "pdf":
        return _pdf(path, budget, ocr)
    if file_type.kind == "docx":
        return _docx(path, budget)
    if file_type.kind == "xlsx":
        return _xlsx(path, budget)
    if file_type.kind == "text":
        return _text(path, file_type, budget)
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
        text = _clean(recognise_file(ocr, path))
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
        raise UnreadableFile(_bomb(PDF, budget)) from exc
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
            text = _clean(page.extract_text() or "")
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
                text = _clean(_recognise_page(rendered, number, ocr))
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
        inflated += len(decode_stream_data(stream))
        if inflated > budget.inflated_bytes:
            raise UnreadableFile(_bomb(PDF, budget))


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
    paragraphs = [t for t in map(_clean, texts) if t]
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
                        line = _clean("\t".join("" if v is None else str(v) for v in values))
                        chars += len(line)
                        budget.check_chars(chars, XLSX)
                        if line:
                            rows.append((number, line))
                    for at in range(0, len(rows), _TEXT_PARAGRAPH_MAX_LINES):
                        block = rows[at : at + _TEXT_PARAGRAPH_MAX_LINES]
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


def _check_unpacked(path: Path, file_type: FileType, budget: Budget) -> None:
    """Refuse an Office file whose parts would unpack past the budget, before any is unpacked.

    The sizes the zip declares bind: `zipfile` reads no byte past them.
    """
    with zipfile.ZipFile(path) as archive:
        inflated = sum(info.file_size for info in archive.infolist())
    if inflated > budget.inflated_bytes:
        raise UnreadableFile(_bomb(file_type, budget))


def _zip_holds(path: Path, head: bytes, member: str) -> bool:
    """An Office file is a zip holding `member`; one whose zip cannot be opened passes."""
    if not head.startswith(_ZIP_SIGNATURE):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            return member in archive.namelist()
    except zipfile.BadZipFile:
        return True


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
        if block and (not line.strip() or len(block) == _TEXT_PARAGRAPH_MAX_LINES):
            sections.append(Section(first, first + len(block) - 1, "\n".join(block)))
            block = []
    if block:
        sections.append(Section(first, first + len(block) - 1, "\n".join(block)))
    if not sections:
        raise UnreadableFile(f"This is {file_type.label} with no text in it.")
    return Document("line", sections)


def decode_text(data: bytes) -> str | None:
    """The text in its detected encoding, or None when it does not look like text.

    The encoding is detected on the first `DETECT_BYTES` (a guess over
    megabytes costs seconds and says no more); a stray bad byte later on
    becomes U+FFFD rather than losing the file.
    """
    sample = data[:DETECT_BYTES]
    encoding = _encoding_of(sample, complete=len(sample) == len(data))
    return None if encoding is None else data.decode(encoding, errors="replace")


def _encoding_of(data: bytes, *, complete: bool) -> str | None:
    """UTF-8 (with or without BOM) and BOM-marked UTF-16 first, then charset-normalizer's guess.

    With `complete` false, `data` is the start of a longer file and may end
    mid-character.
    """
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=complete)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    if b"\x00" in data:
        return None
    guesses = list(charset_normalizer.from_bytes(data))
    if not guesses:
        return None
    # Short texts fit several encodings equally well; between equals, GB18030 wins,
    # the encoding the original service's (Chinese-speaking) users most often have.
    best = guesses[0]
    tied = (g for g in guesses if (g.chaos, g.coherence) == (best.chaos, best.coherence))
    return next((g.encoding for g in tied if g.encoding == "gb18030"), best.encoding)


def _bomb(file_type: FileType, budget: Budget) -> str:
    limit = budget.inflated_bytes // (1024 * 1024)
    return (
        f"This is {file_type.label} that unpacks to more than {limit} MB, "
        "more than can be read: it may be built to overload the reader."
    )


def _clean(text: str) -> str:
    return text.replace("\x00", "").strip()
