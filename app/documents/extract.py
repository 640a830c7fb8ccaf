"""Reading uploaded documents: what a file really is, and its text with locations.

A file's type is decided by its name and confirmed by its content (magic
bytes; for docx and xlsx, the zip's `word/document.xml` or `xl/workbook.xml`;
for text, that it decodes),
so a renamed binary is refused rather than stored as something it is not.
Text comes out in sections that know where they are (page of a pdf,
paragraph of a docx, lines of a text file, rows of a workbook's sheets), so an
answer can cite them.

Everything here blocks (parsers read whole files): callers run it in a
worker thread. A file that is what it claims but yields no text (a scanned
pdf, a damaged file, an image) raises `UnreadableFile` with a sentence a
user understands; the upload is then kept with status `failed`.

Left out: text recognition (OCR) and image description (no vision model),
legacy .doc and .xls, slides, formulas (a workbook's cached values are read),
and pdf/docx headers and footers.
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
from docx.text.paragraph import Paragraph
from pypdf import PasswordType, PdfReader

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
class Section:
    first: int
    last: int
    """The units it spans, from 1."""
    text: str


@dataclass(frozen=True, slots=True)
class Document:
    unit: Unit
    sections: list[Section]

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


def extract(path: Path, file_type: FileType) -> Document:
    """The file's text in located sections; raises `UnreadableFile`."""
    if file_type.kind == "pdf":
        return _pdf(path)
    if file_type.kind == "docx":
        return _docx(path)
    if file_type.kind == "xlsx":
        return _xlsx(path)
    if file_type.kind == "text":
        return _text(path, file_type)
    raise UnreadableFile(
        f"This is {file_type.label}: reading images needs a vision model, and none is configured."
    )


def _pdf(path: Path) -> Document:
    sections: list[Section] = []
    try:
        reader = PdfReader(path)
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise UnreadableFile("The PDF is protected by a password.")
        for number, page in enumerate(reader.pages, 1):
            text = _clean(page.extract_text() or "")
            if text:
                sections.append(Section(number, number, text))
    except UnreadableFile:
        raise
    except Exception as exc:
        # A damaged pdf can make the parser raise nearly anything; all of it means the same.
        raise UnreadableFile("The PDF could not be read: the file may be damaged.") from exc
    if not sections:
        raise UnreadableFile(
            "No text could be found in this PDF: it may be a scanned image, "
            "and text recognition (OCR) is not available."
        )
    return Document("page", sections)


def _docx(path: Path) -> Document:
    """Body paragraphs and table rows in document order, numbered as a reader counts them."""
    texts: list[str] = []
    try:
        for block in docx.Document(str(path)).iter_inner_content():
            if isinstance(block, Paragraph):
                texts.append(block.text)
            else:
                texts.extend(
                    " | ".join(dict.fromkeys(cell.text.strip() for cell in row.cells))
                    for row in block.rows
                )
    except Exception as exc:
        raise UnreadableFile("The Word document could not be read: it may be damaged.") from exc
    paragraphs = [t for t in map(_clean, texts) if t]
    if not paragraphs:
        raise UnreadableFile("The Word document contains no text.")
    return Document("paragraph", [Section(n, n, t) for n, t in enumerate(paragraphs, 1)])


def _xlsx(path: Path) -> Document:
    """Each sheet's rows as tab-separated lines, under the sheet's name, numbered across sheets."""
    sections: list[Section] = []
    number = 0
    try:
        # A file object: openpyxl refuses a path that does not end in .xlsx (blob keys do not).
        with path.open("rb") as handle:
            book = openpyxl.load_workbook(handle, read_only=True, data_only=True)
            try:
                for sheet in book.worksheets:
                    rows: list[tuple[int, str]] = []
                    for values in sheet.iter_rows(values_only=True):
                        number += 1
                        line = _clean("\t".join("" if v is None else str(v) for v in values))
                        if line:
                            rows.append((number, line))
                    for at in range(0, len(rows), _TEXT_PARAGRAPH_MAX_LINES):
                        block = rows[at : at + _TEXT_PARAGRAPH_MAX_LINES]
                        text = "\n".join([f"[{sheet.title}]", *(line for _, line in block)])
                        sections.append(Section(block[0][0], block[-1][0], text))
            finally:
                book.close()
    except Exception as exc:
        raise UnreadableFile("The Excel workbook could not be read: it may be damaged.") from exc
    if not sections:
        raise UnreadableFile("The Excel workbook contains no data.")
    return Document("row", sections)


def _zip_holds(path: Path, head: bytes, member: str) -> bool:
    """An Office file is a zip holding `member`; one whose zip cannot be opened passes."""
    if not head.startswith(_ZIP_SIGNATURE):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            return member in archive.namelist()
    except zipfile.BadZipFile:
        return True


def _text(path: Path, file_type: FileType) -> Document:
    text = decode_text(path.read_bytes())
    if text is None:
        raise UnreadableFile(f"The encoding of {file_type.label} could not be recognised.")
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


def _clean(text: str) -> str:
    return text.replace("\x00", "").strip()
