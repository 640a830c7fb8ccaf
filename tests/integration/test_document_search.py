"""The file library end to end below HTTP: upload real documents, then search them.

Runs on SQLite and PostgreSQL, with the local blob store; hybrid search uses
a fake embeddings server over real HTTP (tests/fakes/embeddings_server.py).
"""

from __future__ import annotations

import dataclasses
import io
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from pydantic import SecretStr

from app.documents.library import DocumentLibrary, FileTooLarge, LibrarySettings, UnsupportedFile
from app.documents.retrieval import Embedder
from app.llm.embeddings import OpenAIEmbeddings
from app.store.base import StoreUnavailable
from app.store.blobs import LocalBlobStore
from app.store.db import Database
from app.store.file_store import SqlFileStore
from app.store.models import StoredFile
from tests.fakes.embeddings_server import FakeEmbeddings
from tests.support.documents import pdf_bytes

SEARCH = dataclasses.replace(
    LibrarySettings.defaults(), chunk_chars=150, overlap_chars=30, whole_text_chars=0
)
"""Passages of at most 150 characters: one page of `TOPICS` each."""

TOPICS = [
    "Shipping. Orders leave the warehouse within two days and arrive in about a week.",
    "Installation. Mount the pump on a level surface and connect the inlet hose first.",
    "Cleaning. Rinse the filter monthly with clear water; never use detergents on it.",
    "Noise. The pump hums while running; a rattling sound means the feet are loose.",
    "Power. Use a grounded socket only; the pump draws 450 watts when at full speed.",
    "Storage. Drain all the water before winter and keep the pump in a dry room.",
    "Warranty. The warranty period for the pump is seven years from the date of purchase.",
    "Returns. Unused products may be returned within thirty days of delivery for a refund.",
    "Spare parts. Seals, filters and hoses are sold separately by local dealers.",
    "Safety. Unplug the pump before opening the housing or touching the impeller.",
]
"""Ten pages about one pump; only page 7 says how long the warranty is.

Each is 75 to 90 characters long: at `SEARCH`'s 150, one page makes one passage.
"""

CAR_STORY = [
    "The automobile exhibition opens in spring with posters, music, food stalls, guided "
    "tours and a parade through the old town.",
    "Our office was closed on Monday because its heating needed a long service by two "
    "technicians from another city.",
    "The car was repaired at the north garage on Tuesday; the mechanic says the brakes are "
    "fine now.",
    "Lunch is served in the hall, and the menu is printed on blue paper every week as usual.",
    "The night train from the coast was late again, so tired passengers waited in the small "
    "station cafe near platform four.",
    "The garden was watered every evening while the owners travelled abroad for a month or "
    "so, and the neighbours took turns.",
]
"""Only the third paragraph answers "When was the automobile fixed?", in other words."""


@dataclass
class Library:
    files: DocumentLibrary
    blobs: Path


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
async def fake_embeddings() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings().running() as fake:
        yield fake


def library(
    db: Database,
    tmp_path: Path,
    settings: LibrarySettings = SEARCH,
    embedder: Embedder | None = None,
) -> Library:
    root = tmp_path / "blobs"
    return Library(
        DocumentLibrary(
            SqlFileStore(db), LocalBlobStore(root), embedder=embedder, settings=settings
        ),
        root,
    )


def embedder_for(fake: FakeEmbeddings, http: httpx2.AsyncClient) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(http, fake.base_url, SecretStr("emb-key"), "fake-embed", batch_size=4)


async def upload(lib: Library, name: str, data: bytes, user: str = "alice") -> StoredFile:
    return await lib.files.upload(user, name, io.BytesIO(data))


def stored_blobs(lib: Library) -> list[Path]:
    return [p for p in lib.blobs.rglob("*") if p.is_file()]


async def test_bm25_finds_the_page_that_answers_among_distractors(
    db: Database, tmp_path: Path
) -> None:
    lib = library(db, tmp_path)
    file = await upload(lib, "manual.pdf", pdf_bytes(TOPICS))

    found = await lib.files.search(file, "How long is the pump warranty?")

    assert (file.status, file.embedding_model) == ("ready", None)
    assert (found.whole, found.matched) == (False, True)
    best = found.passages[0]
    assert (best.unit, best.first, best.last) == ("page", 7, 7)
    assert "seven years" in best.text
    assert len(found.passages) == SEARCH.top_k


async def test_hybrid_search_finds_what_bm25_alone_misses(
    db: Database, tmp_path: Path, fake_embeddings: FakeEmbeddings, http: httpx2.AsyncClient
) -> None:
    paragraphs = "\n\n".join(CAR_STORY).encode()
    # Passages of at most 180 characters: one paragraph each.
    settings = dataclasses.replace(
        LibrarySettings.defaults(), chunk_chars=180, overlap_chars=40, whole_text_chars=0
    )
    lexical = library(db, tmp_path / "a", settings)
    hybrid = library(db, tmp_path / "b", settings, embedder_for(fake_embeddings, http))
    question = "When was the automobile fixed?"

    plain = await upload(lexical, "story.txt", paragraphs)
    embedded = await upload(hybrid, "story.txt", paragraphs)
    by_bm25 = await lexical.files.search(plain, question)
    by_both = await hybrid.files.search(embedded, question)

    target = "The car was repaired"
    assert target not in by_bm25.passages[0].text
    assert target in by_both.passages[0].text
    assert by_both.passages[0].first == 5  # the line the paragraph is on
    assert embedded.embedding_model == "fake-embed"
    # Passages were embedded at upload in batches of 4, the question at search time.
    uploaded = [text for batch in fake_embeddings.inputs[:-1] for text in batch]
    assert len(uploaded) == len(CAR_STORY)
    assert all(len(batch) <= 4 for batch in fake_embeddings.inputs)
    assert fake_embeddings.inputs[-1] == [question]
    assert set(fake_embeddings.auth_headers) == {"Bearer emb-key"}


async def test_embeddings_down_at_upload_leaves_a_file_searched_by_bm25(
    db: Database, tmp_path: Path, fake_embeddings: FakeEmbeddings, http: httpx2.AsyncClient
) -> None:
    fake_embeddings.fail_status = 503
    lib = library(db, tmp_path, embedder=embedder_for(fake_embeddings, http))

    file = await upload(lib, "manual.pdf", pdf_bytes(TOPICS))
    requests_at_upload = len(fake_embeddings.inputs)
    found = await lib.files.search(file, "pump warranty period")

    assert (file.status, file.embedding_model) == ("ready", None)
    assert found.passages[0].first == 7
    # A file without vectors is not worth a query embedding.
    assert len(fake_embeddings.inputs) == requests_at_upload == 1


async def test_embeddings_down_at_search_falls_back_to_bm25(
    db: Database, tmp_path: Path, fake_embeddings: FakeEmbeddings, http: httpx2.AsyncClient
) -> None:
    lib = library(db, tmp_path, embedder=embedder_for(fake_embeddings, http))
    file = await upload(lib, "manual.pdf", pdf_bytes(TOPICS))
    fake_embeddings.fail_status = 500

    found = await lib.files.search(file, "pump warranty period")

    assert file.embedding_model == "fake-embed"
    assert found.passages[0].first == 7


async def test_a_small_file_is_read_whole(db: Database, tmp_path: Path) -> None:
    lib = library(
        db, tmp_path, dataclasses.replace(LibrarySettings.defaults(), whole_text_chars=8000)
    )
    file = await upload(lib, "short.pdf", pdf_bytes(TOPICS[:3]))

    found = await lib.files.search(file, "anything at all")

    assert found.whole
    (passage,) = found.passages
    assert (passage.unit, passage.first, passage.last) == ("page", 1, 3)
    assert all(topic in passage.text for topic in TOPICS[:3])


async def test_no_match_gives_the_beginning_of_the_document(db: Database, tmp_path: Path) -> None:
    lib = library(db, tmp_path)
    file = await upload(lib, "manual.pdf", pdf_bytes(TOPICS))

    found = await lib.files.search(file, "zebra xylophone")

    assert not found.matched
    assert found.passages[0].first == 1


async def test_failed_uploads_leave_nothing_behind(db: Database, tmp_path: Path) -> None:
    lib = library(db, tmp_path, dataclasses.replace(LibrarySettings.defaults(), max_bytes=2000))

    with pytest.raises(FileTooLarge):
        await upload(lib, "big.txt", b"x" * 2001)
    with pytest.raises(UnsupportedFile):
        await upload(lib, "fake.pdf", b"not a pdf at all")

    assert await lib.files.list_files("alice") == []
    assert stored_blobs(lib) == []


async def test_a_database_that_is_down_fails_the_upload_and_keeps_no_bytes(
    tmp_path: Path,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{port}/gone"
    async with Database.open(url, pool_size=1, migrate=False) as down:
        lib = library(down, tmp_path)

        with pytest.raises(StoreUnavailable):
            await upload(lib, "manual.pdf", pdf_bytes(TOPICS))

    assert stored_blobs(lib) == []


async def test_delete_removes_bytes_text_and_passages(db: Database, tmp_path: Path) -> None:
    lib = library(db, tmp_path)
    file = await upload(lib, "manual.pdf", pdf_bytes(TOPICS))
    store = SqlFileStore(db)
    assert await store.file_chunks("alice", file.id)

    assert not await lib.files.delete("bob", file.id)
    assert await lib.files.delete("alice", file.id)

    assert await store.file_chunks("alice", file.id) == []
    assert await store.file_content("alice", file.id) is None
    assert stored_blobs(lib) == []
    assert not await lib.files.delete("alice", file.id)
