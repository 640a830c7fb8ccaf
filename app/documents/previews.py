"""Pictures of a file's pages (`GET /file/preview/{fileId}?page=N`) and PDFs of office files.

A pdf's page is drawn by pdfium; a docx, pptx or xlsx is first made a PDF by
LibreOffice; a png or jpeg is its own only page. Drawing happens in a child
process with the limits of document reading (`FILE_PARSE_MEMORY_MB`,
`FILE_PARSE_SECONDS`), at most `PREVIEW_WORKERS` at once (documents/office.py),
with the PDFs of reports and decks and a deck's thumbnails.
What it makes is kept in the blob store beside the file's bytes, under
`previews/<the file's blob key>/`: the page count, the PDF of an office
file, and each page's PNG as it is first asked for, so a page is drawn once;
`forget` removes them with the file.

    PreviewError
    ├── NoPreview           the type has none (text, csv, ...)          -> 415
    ├── NoSuchPage          past the last page                          -> 404
    └── PreviewFailed       the file could not be drawn (damaged, a limit) -> 422
        └── PreviewUnavailable  LibreOffice is not installed              -> 503
"""

from __future__ import annotations

import asyncio
import io
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from app.documents import office
from app.store.blobs import BlobNotFound, BlobStore
from app.store.models import StoredFile

PAGE_WIDTH = 1000
"""Pixels across a page picture: readable on a screen, a thumbnail by scaling down."""
CONVERTED = frozenset(
    {
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    }
)
"""Office files, which LibreOffice makes a PDF of before a page is drawn."""
PDF = "application/pdf"
IMAGES = frozenset({"image/png", "image/jpeg"})
SUFFIXES = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
}


class PreviewError(Exception):
    pass


class NoPreview(PreviewError):
    pass


class NoSuchPage(PreviewError):
    pass


class PreviewFailed(PreviewError):
    pass


class PreviewUnavailable(PreviewFailed):
    pass


@dataclass(frozen=True, slots=True)
class Picture:
    data: bytes
    media_type: str


def previewable(mime_type: str) -> bool:
    return mime_type == PDF or mime_type in CONVERTED or mime_type in IMAGES


class FilePreviews:
    def __init__(self, blobs: BlobStore, limits: office.RenderLimits, workers: int) -> None:
        self._blobs = blobs
        self._limits = limits
        self._drawing = asyncio.Semaphore(workers)

    async def page_count(self, file: StoredFile) -> int | None:
        """How many pages a preview has; None for a type with none, or a file that cannot
        be drawn (its preview says why)."""
        if not previewable(file.mime_type):
            return None
        if file.mime_type in IMAGES:
            return 1
        try:
            _check(file)
            return await self._count(file.blob_key, file.mime_type)
        except PreviewFailed:
            return None

    async def page(self, file: StoredFile, number: int) -> Picture:
        """Page `number` (1-based) as a PNG, or the image itself; see the module's errors.

        Raises `BlobNotFound` when the file has no bytes (one an agent could not make)."""
        blob_key, mime_type = file.blob_key, file.mime_type
        if not previewable(mime_type):
            raise NoPreview("This type of file has no preview.")
        _check(file)
        if number < 1:
            raise NoSuchPage(f"There is no page {number}.")
        if mime_type in IMAGES:
            if number != 1:
                raise NoSuchPage(f"An image has one page, not {number}.")
            return Picture(await self._read(blob_key), mime_type)
        cached = await self._cached(_page_key(blob_key, number))
        if cached is not None:
            return Picture(cached, "image/png")
        count = await self._count(blob_key, mime_type)
        if number > count:
            raise NoSuchPage(f"The file has {count} pages, not {number}.")
        drawn = await self._draw(blob_key, mime_type, [number])
        return Picture(drawn.images[number], "image/png")

    async def pdf_of(self, data: bytes, suffix: str, seconds: float | None = None) -> bytes:
        """LibreOffice's PDF of an office file's bytes (a report's docx, a deck): a reason
        when not. `seconds`: the time limit, when not reading's (a deck's own)."""
        return (await self._made(data, suffix, seconds, convert=True, pages=[]))[0]

    async def pictures_of(
        self, pdf: bytes, width: int, seconds: float | None = None
    ) -> list[bytes]:
        """A PNG of each page of a PDF, `width` pixels across (a deck's thumbnails)."""
        return (await self._made(pdf, ".pdf", seconds, convert=False, pages=None, width=width))[1]

    async def forget(self, blob_key: str) -> None:
        """Remove what was kept of a file's preview (the file is gone)."""
        count = await self._cached(_count_key(blob_key))
        pages = int(count) if count else 0
        for number in range(1, pages + 1):
            await self._blobs.delete(_page_key(blob_key, number))
        await self._blobs.delete(_pdf_key(blob_key))
        await self._blobs.delete(_count_key(blob_key))

    async def _count(self, blob_key: str, mime_type: str) -> int:
        cached = await self._cached(_count_key(blob_key))
        if cached is not None:
            return int(cached)
        return (await self._draw(blob_key, mime_type, [1])).page_count

    async def _draw(self, blob_key: str, mime_type: str, pages: list[int]) -> office.Rendered:
        """Draw `pages`, keeping the count, an office file's PDF and the pictures."""
        convert = mime_type in CONVERTED
        with tempfile.TemporaryDirectory(prefix="preview-") as folder:
            work = Path(folder)
            pdf = await self._cached(_pdf_key(blob_key)) if convert else None
            if pdf is not None:
                source, convert = work / "cached.pdf", False
                await asyncio.to_thread(source.write_bytes, pdf)
                rendered = await self._render(source, work, convert=False, pages=pages)
            else:
                async with self._blobs.local_path(blob_key) as path:
                    if convert:
                        # LibreOffice tells the type by the name: the blob's has no suffix.
                        source = work / f"source{SUFFIXES[mime_type]}"
                        await asyncio.to_thread(shutil.copyfile, path, source)
                    else:
                        source = path
                    rendered = await self._render(source, work, convert=convert, pages=pages)
                if convert:
                    made = await asyncio.to_thread(rendered.pdf.read_bytes)
                    await self._keep(_pdf_key(blob_key), made)
            await self._keep(_count_key(blob_key), str(rendered.page_count).encode())
            for number, png in rendered.images.items():
                await self._keep(_page_key(blob_key, number), png)
            return rendered

    async def _made(
        self,
        data: bytes,
        suffix: str,
        seconds: float | None,
        *,
        convert: bool,
        pages: list[int] | None,
        width: int = PAGE_WIDTH,
    ) -> tuple[bytes, list[bytes]]:
        """What is drawn of bytes kept nowhere: the PDF, and the pages' PNGs in order."""
        with tempfile.TemporaryDirectory(prefix="office-pdf-") as folder:
            work = Path(folder)
            source = work / f"source{suffix}"
            await asyncio.to_thread(source.write_bytes, data)
            rendered = await self._render(
                source, work, convert=convert, pages=pages, width=width, seconds=seconds
            )
            pdf = await asyncio.to_thread(rendered.pdf.read_bytes)
            return pdf, [rendered.images[n] for n in sorted(rendered.images)]

    async def _render(
        self,
        source: Path,
        work: Path,
        *,
        convert: bool,
        pages: list[int] | None,
        width: int = PAGE_WIDTH,
        seconds: float | None = None,
    ) -> office.Rendered:
        """Every drawing of the service waits here for one of `PREVIEW_WORKERS`: each is
        a LibreOffice or pdfium process of up to `FILE_PARSE_MEMORY_MB`."""
        limits = self._limits if seconds is None else replace(self._limits, seconds=seconds)
        try:
            async with self._drawing:
                return await office.render(
                    source, work, convert=convert, pages=pages, width=width, limits=limits
                )
        except office.OfficeMissing as exc:
            raise PreviewUnavailable(str(exc)) from exc
        except office.RenderFailed as exc:
            raise PreviewFailed(str(exc)) from exc

    async def _read(self, key: str) -> bytes:
        return b"".join([chunk async for chunk in await self._blobs.read(key)])

    async def _cached(self, key: str) -> bytes | None:
        try:
            return await self._read(key)
        except BlobNotFound:
            return None

    async def _keep(self, key: str, data: bytes) -> None:
        await self._blobs.put(key, io.BytesIO(data), len(data))


def _check(file: StoredFile) -> None:
    """An office file that could not be read (a bomb, a damaged file) is not given to
    LibreOffice: it would spend the limits again to fail the same way. A pdf is (pdfium
    draws what it can, and a scan without text is still worth seeing)."""
    if file.mime_type in CONVERTED and file.status == "failed" and file.source == "upload":
        raise PreviewFailed(f"The file could not be read, so it has no preview. {file.error}")


def _count_key(blob_key: str) -> str:
    return f"previews/{blob_key}/pages"


def _pdf_key(blob_key: str) -> str:
    return f"previews/{blob_key}/pdf"


def _page_key(blob_key: str, number: int) -> str:
    return f"previews/{blob_key}/page-{number}"
