"""The file library: what happens to an uploaded document, from upload to deletion.

Upload: the name decides the type (only pdf, docx, xlsx, pptx, txt, md, csv,
tsv, png and jpg), the bytes are copied to the blob store under a generated key
with the size capped, the content must be what the name says, then the text
is extracted in a child process with limits (documents/isolated.py, at most
`parse_workers` at once) and cut into passages, embedded when an embeddings
endpoint is configured, and recorded with its status. All of that happens
before the upload answers, so the next request can use the file at once.
A file that is what it claims but has no readable text (a scanned pdf, an
image, a damaged file) is kept with status `failed` and the reason.

Generated files (a deck, a skill's output) are stored the same way, with
`source: generated` and the conversation that made them, which takes them
along when it is deleted; their `file` event comes from `generated_event`.
One an agent could not make (`add_unmade`) is recorded `failed`, with why.
Pictures of any file's pages come from `previews` (documents/previews.py).

Search: the passages of one file that best match a query, or the whole text
of a file small enough to be one passage.

    FileError
    ├── UnsupportedFile   the type is not accepted, or the content is not what the name says
    ├── FileTooLarge      more than UPLOAD_MAX_BYTES
    └── EmptyFile         no bytes at all

`StoreError` from the database passes through; nothing is left behind when
an upload fails (no blob, no row).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import re
import unicodedata
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any, BinaryIO

from app.config import SettingsPart
from app.core.events import FileEvent
from app.documents.extract import (
    TYPES_BY_EXTENSION,
    Budget,
    FileType,
    UnreadableFile,
    content_matches,
    type_for_name,
)
from app.documents.isolated import ParseLimits, extract_isolated, layouts_isolated
from app.documents.ocr import OcrSettings, tesseract_path, usable_languages
from app.documents.office import RenderLimits
from app.documents.previews import FilePreviews
from app.documents.retrieval import Bm25Index, Embedder, chunk, normalize, rank
from app.llm.embeddings import EmbeddingError
from app.store.base import FileChunk, FileOutcome, FileStore, StoreError
from app.store.blobs import BlobStore, BlobTooLarge
from app.store.models import StoredFile

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 255
_UNSAFE_NAME_CHARS = re.compile(r'[<>:"|?*]')
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
"""Controls, format characters (bidi overrides that show `gnp.exe` as `exe.png`, zero-width
spaces) and line breaks: nothing a name should hide or reorder."""


class FileError(Exception):
    pass


class UnsupportedFile(FileError):
    pass


class FileTooLarge(FileError):
    pass


class EmptyFile(FileError):
    pass


class LibrarySettings(
    SettingsPart,
    prefix="file_",
    renamed={
        "max_bytes": "upload_max_bytes",
        "overlap_chars": "file_chunk_overlap_chars",
        "top_k": "file_search_top_k",
        "ocr_enabled": "ocr_enabled",
        "ocr_langs": "ocr_langs",
        "ocr_max_pages": "ocr_max_pages",
        "preview_workers": "preview_workers",
    },
):
    max_bytes: int
    chunk_chars: int
    overlap_chars: int
    whole_text_chars: int
    top_k: int
    parse_workers: int
    max_inflated_bytes: int
    max_pages: int
    max_chars: int
    parse_memory_mb: int
    parse_seconds: float
    ocr_enabled: bool
    ocr_langs: str
    ocr_max_pages: int
    preview_workers: int

    @property
    def parsing(self) -> ParseLimits:
        """What the child process that reads one document is given: its budget and limits."""
        engine = tesseract_path()
        langs = usable_languages(engine, self.ocr_langs) if engine else ""
        ocr = OcrSettings(engine, langs, self.ocr_max_pages)
        return ParseLimits(
            Budget(self.max_inflated_bytes, self.max_pages, self.max_chars),
            self.parse_memory_mb * 1024 * 1024,
            self.parse_seconds,
            ocr if self.ocr_enabled else None,
        )


@dataclass(frozen=True, slots=True)
class Passages:
    passages: list[FileChunk]
    """Best first; the whole text when `whole`; the document's start when not `matched`."""
    whole: bool
    matched: bool


class DocumentLibrary:
    def __init__(
        self,
        store: FileStore,
        blobs: BlobStore,
        *,
        embedder: Embedder | None,
        settings: LibrarySettings,
    ) -> None:
        self._store = store
        self._blobs = blobs
        self._embedder = embedder
        self._settings = settings
        self._parsing = asyncio.Semaphore(settings.parse_workers)
        # Pages are drawn under the limits of reading a document: both open what users sent.
        drawing = RenderLimits(settings.parse_memory_mb * 1024 * 1024, settings.parse_seconds)
        self.previews = FilePreviews(blobs, drawing, settings.preview_workers)

    async def upload(self, user_id: str, name: str, source: BinaryIO) -> StoredFile:
        file_name = clean_file_name(name)
        file_type = type_for_name(file_name)
        if file_type is None:
            accepted = ", ".join(TYPES_BY_EXTENSION)
            raise UnsupportedFile(f"Unsupported file type: the accepted types are {accepted}.")
        file_id = uuid.uuid4().hex
        key = f"uploads/{file_id}"
        try:
            size = await self._blobs.put(key, source, self._settings.max_bytes)
        except BlobTooLarge as exc:
            raise FileTooLarge(
                f"The file is larger than the limit of {self._settings.max_bytes} bytes."
            ) from exc
        record = _new_file(file_id, user_id, file_name, file_type.mime_type, size, key)
        try:
            await self._check(key, size, file_type)
            await self._store.add_file(record)
        except BaseException:
            await self._discard(key)
            raise
        try:
            outcome = await self._process(key, file_type)
            await self._store.finish_file(file_id, outcome)
        except BaseException:
            with contextlib.suppress(StoreError):
                await self._store.delete_file(user_id, file_id)
            await self._discard(key)
            raise
        record.status, record.error = outcome.status, outcome.error
        record.embedding_model = outcome.embedding_model
        return record

    async def add_generated(
        self, user_id: str, conversation_id: str, name: str, data: bytes, mime_type: str
    ) -> StoredFile:
        """Keep a file an agent made for the user: listed, downloadable, `ready` at once.

        It belongs to the conversation that made it and is deleted with it.
        Nothing is left behind when storing fails.
        """
        file_id = uuid.uuid4().hex
        key = f"generated/{file_id}"
        size = await self._blobs.put(key, io.BytesIO(data), len(data))
        record = _new_file(file_id, user_id, clean_file_name(name), mime_type, size, key)
        record.status, record.source, record.session_id = "ready", "generated", conversation_id
        try:
            await self._store.add_file(record)
        except BaseException:
            await self._discard(key)
            raise
        return record

    async def add_unmade(
        self, user_id: str, conversation_id: str, name: str, mime_type: str, error: str
    ) -> StoredFile:
        """Record a file an agent could not make (a report's PDF without LibreOffice):
        `failed`, with `error` saying why, and no bytes; deleted with its conversation."""
        file_id = uuid.uuid4().hex
        record = _new_file(
            file_id, user_id, clean_file_name(name), mime_type, 0, f"generated/{file_id}"
        )
        record.status, record.error = "failed", error
        record.source, record.session_id = "generated", conversation_id
        await self._store.add_file(record)
        return record

    async def get(self, user_id: str, file_id: str) -> StoredFile | None:
        return await self._store.get_file(user_id, file_id)

    async def list_files(self, user_id: str) -> list[StoredFile]:
        return await self._store.list_files(user_id)

    async def content(self, user_id: str, file_id: str) -> str | None:
        return await self._store.file_content(user_id, file_id)

    async def layouts(self, file: StoredFile) -> dict[str, Any]:
        """A pptx's slide size and layouts (`readers.layouts`), read in the child process
        under the upload's limits; raises `UnreadableFile`."""
        async with self._parsing, self._blobs.local_path(file.blob_key) as path:
            return await layouts_isolated(path, self._settings.parsing)

    async def download(self, file: StoredFile) -> AsyncIterator[bytes]:
        """The stored bytes; raises `BlobNotFound` if they are gone."""
        return await self._blobs.read(file.blob_key)

    async def delete(self, user_id: str, file_id: str) -> bool:
        """Delete the rows (chunks and vectors with them), then the bytes."""
        key = await self._store.delete_file(user_id, file_id)
        if key is None:
            return False
        await self._discard(key)
        return True

    async def discard_blobs(self, keys: Iterable[str]) -> None:
        """Remove the bytes of files whose rows were deleted elsewhere (with a conversation)."""
        for key in keys:
            await self._discard(key)

    async def search(self, file: StoredFile, query: str) -> Passages:
        """The passages of a `ready` file that best match `query`."""
        chunks = await self._store.file_chunks(file.user_id, file.id)
        top_k = self._settings.top_k
        if len(chunks) <= 1:
            return Passages(chunks, whole=True, matched=True)
        query_vector = await self._query_vector(file, chunks, query)
        vectors = [c.vector or [] for c in chunks] if query_vector else None
        order = await asyncio.to_thread(
            lambda: rank(Bm25Index([c.text for c in chunks]), query, top_k, vectors, query_vector)
        )
        if not order:
            return Passages(chunks[:top_k], whole=False, matched=False)
        return Passages([chunks[i] for i in order], whole=False, matched=True)

    async def search_files(
        self, files: Sequence[StoredFile], query: str
    ) -> list[tuple[StoredFile, FileChunk]]:
        """The passages of several `ready` files (a project's) that best match `query`, ranked
        together, best first; none when no passage shares a word with it (and no vectors)."""
        pool = [
            (file, passage)
            for file in files
            for passage in await self._store.file_chunks(file.user_id, file.id)
        ]
        if not pool:
            return []
        chunks = [passage for _, passage in pool]
        query_vector = None
        if all(self._embedded_now(file) for file in files):
            query_vector = await self._query_vector(files[0], chunks, query)
        vectors = [c.vector or [] for c in chunks] if query_vector else None
        order = await asyncio.to_thread(
            lambda: rank(
                Bm25Index([c.text for c in chunks]),
                query,
                self._settings.top_k,
                vectors,
                query_vector,
            )
        )
        return [pool[i] for i in order]

    def _embedded_now(self, file: StoredFile) -> bool:
        return self._embedder is not None and file.embedding_model == self._embedder.model

    async def _discard(self, key: str) -> None:
        """Remove bytes whose rows are gone (or never were), and what their preview kept;
        a failure is logged, not raised.

        The rows decide what exists: bytes left behind by a failing disk are
        unreachable, and failing the request over them would hide what did happen.
        """
        try:
            await self._blobs.delete(key)
            await self.previews.forget(key)
        except OSError:
            log.warning("could not delete blob %s", key, exc_info=True)

    async def _check(self, key: str, size: int, file_type: FileType) -> None:
        if size == 0:
            raise EmptyFile("The file is empty.")
        async with self._blobs.local_path(key) as path:
            if not await asyncio.to_thread(content_matches, path, file_type):
                raise UnsupportedFile(
                    f"The file is named as {file_type.label}, but its content is not one."
                )

    async def _process(self, key: str, file_type: FileType) -> FileOutcome:
        settings = self._settings
        try:
            async with self._parsing, self._blobs.local_path(key) as path:
                document = await extract_isolated(path, file_type, settings.parsing)
        except UnreadableFile as exc:
            return FileOutcome("failed", error=str(exc))
        chunks = await asyncio.to_thread(
            chunk, document, settings.chunk_chars, settings.overlap_chars, settings.whole_text_chars
        )
        model = await self._embed(chunks) if len(chunks) > 1 else None
        return FileOutcome(
            "ready",
            content=document.text,
            chunks=chunks,
            embedding_model=model,
            ocr=document.ocr,
        )

    async def _embed(self, chunks: list[FileChunk]) -> str | None:
        """Give the chunks vectors; the model's name, or None when there are none."""
        if self._embedder is None:
            return None
        try:
            vectors = await self._embedder.embed([c.text for c in chunks])
        except EmbeddingError as exc:
            log.warning("no embeddings for an upload, it will be searched by BM25 alone: %s", exc)
            return None
        for item, vector in zip(chunks, vectors, strict=True):
            item.vector = normalize(vector)
        return self._embedder.model

    async def _query_vector(
        self, file: StoredFile, chunks: list[FileChunk], query: str
    ) -> list[float] | None:
        """The query's vector, when the file was embedded by the model configured now."""
        embedder = self._embedder
        if embedder is None or file.embedding_model != embedder.model:
            return None
        if any(c.vector is None for c in chunks):
            return None
        try:
            (vector,) = await embedder.embed([query])
        except EmbeddingError as exc:
            log.warning("no query embedding, searching by BM25 alone: %s", exc)
            return None
        return normalize(vector)


def _new_file(
    file_id: str, user_id: str, name: str, mime_type: str, size: int, key: str
) -> StoredFile:
    """The record of bytes just stored: an upload, until its text is extracted."""
    now = datetime.now(UTC)
    return StoredFile(
        id=file_id,
        user_id=user_id,
        file_name=name,
        mime_type=mime_type,
        size=size,
        blob_key=key,
        status="processing",
        error=None,
        embedding_model=None,
        create_time=now,
        update_time=now,
    )


def clean_file_name(name: str) -> str:
    """The last path component, NFC, without invisible or reserved characters, at most 255 long.

    Display only: the bytes are stored under a generated key, never under this name.
    """
    base = PurePath(name.replace("\\", "/")).name
    base = "".join(
        c
        for c in unicodedata.normalize("NFC", base)
        if unicodedata.category(c) not in _INVISIBLE_CATEGORIES
    )
    base = _UNSAFE_NAME_CHARS.sub("", base).strip(" .")
    if len(base) > MAX_NAME_CHARS:
        suffix = PurePath(base).suffix[:16]
        base = base[: MAX_NAME_CHARS - len(suffix)] + suffix
    return base


def generated_event(file: StoredFile) -> FileEvent:
    """The `file` event that hands a generated file to the user (and to the turn's history);
    one that could not be made says so, and why."""
    failed = file.status == "failed"
    return FileEvent(
        file_id=file.id,
        name=file.file_name,
        url=f"/file/download/{file.id}",
        size=file.size,
        mime_type=file.mime_type,
        status="failed" if failed else None,
        error=file.error if failed else None,
    )
