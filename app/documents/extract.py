"""Reading uploaded documents: what a file really is, and its text with locations.

A file's type is decided by its name and confirmed by its content (magic
bytes; for docx, xlsx and pptx, the zip's `word/document.xml`, `xl/workbook.xml` or
`ppt/presentation.xml`;
for text, that it decodes),
so a renamed binary is refused rather than stored as something it is not.
Text comes out in sections that know where they are (page of a pdf,
paragraph of a docx, lines of a text file, rows of a workbook's sheets), so an
answer can cite them.

Reading blocks (parsers read whole files): `extract` runs in a child
process with limits (documents/isolated.py): `readers.extract`, which only
that process imports, with the parsers of every type. It reads
within a
`Budget` (bytes inflated, pages, characters) so a decompression bomb stops
at the budget rather than at the memory limit. A file that is what it
claims but yields no text (a damaged file, a bomb, a scan when OCR is off
or not installed) raises `UnreadableFile` with a sentence a user
understands; the upload is then kept with status `failed`.

With OCR (documents/ocr.py, Tesseract), a PNG or JPEG is read as one page,
and each PDF page without a text layer is rendered and read, so a PDF with
some typed and some scanned pages gets both, each under its own number;
`Document.ocr` says whether any text came that way.

A pptx is read for its slides' text (a template may have none: it is then
`ready` with no text) and, for the deck builder, for its layouts
(`readers.layouts`).

Left out: image description (no vision model), legacy .doc, .xls and .ppt,
formulas (a workbook's cached values are read), and pdf/docx
headers and footers.
"""

from __future__ import annotations

import codecs
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Literal

import charset_normalizer

SNIFF_BYTES = 64 * 1024
DETECT_BYTES = 256 * 1024
PDF_HEADER_WITHIN = 1024
"""Readers accept `%PDF-` anywhere in the first kilobyte, after junk some writers prepend."""

Kind = Literal["pdf", "docx", "xlsx", "pptx", "text", "image"]
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
PPTX = FileType(
    "pptx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "a PowerPoint deck",
    "page",
)
"""Read for its slides' text, and usable as a deck template (its layouts: readers.layouts)."""
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
    ".pptx": PPTX,
    ".png": PNG,
    ".jpg": JPEG,
    ".jpeg": JPEG,
}

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_SIGNATURE = b"\xff\xd8\xff"
_ZIP_SIGNATURE = b"PK\x03\x04"
_BINARY_SIGNATURES = (_PNG_SIGNATURE, _JPEG_SIGNATURE, _ZIP_SIGNATURE, b"%PDF-")
TEXT_PARAGRAPH_MAX_LINES = 20
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
    if expected is PPTX:
        return _zip_holds(path, head, "ppt/presentation.xml")
    if expected is PNG:
        return head.startswith(_PNG_SIGNATURE)
    if expected is JPEG:
        return head.startswith(_JPEG_SIGNATURE)
    if head.startswith(_BINARY_SIGNATURES):
        return False
    return _encoding_of(head, complete=len(head) < SNIFF_BYTES) is not None


def _zip_holds(path: Path, head: bytes, member: str) -> bool:
    """An Office file is a zip holding `member`; one whose zip cannot be opened passes."""
    if not head.startswith(_ZIP_SIGNATURE):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            return member in archive.namelist()
    except zipfile.BadZipFile:
        return True


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


def bomb_reason(file_type: FileType, budget: Budget) -> str:
    limit = budget.inflated_bytes // (1024 * 1024)
    return (
        f"This is {file_type.label} that unpacks to more than {limit} MB, "
        "more than can be read: it may be built to overload the reader."
    )


def clean(text: str) -> str:
    return text.replace("\x00", "").strip()
