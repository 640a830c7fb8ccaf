"""The `FileStore` contract, run against SQLite and PostgreSQL alike.

Uploaded files' metadata, extracted text and passages, through the public
store API only, on a fresh migrated database per test (the `db` fixture), so
a behaviour that differs between the two databases fails here rather than in
production. The bytes are the blob store's (test_blob_store_contract.py);
what the library does with both is tested in test_document_search.py.
"""

from __future__ import annotations

from array import array
from datetime import UTC, datetime, timedelta

import pytest

from app.store.base import FileChunk, FileOutcome, FileStore
from app.store.db import Database
from app.store.file_store import SqlFileStore
from app.store.models import StoredFile

CREATED = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


@pytest.fixture
def store(db: Database) -> FileStore:
    return SqlFileStore(db)


def new_file(
    file_id: str = "f-1",
    user_id: str = "alice",
    created: datetime = CREATED,
    file_name: str = "manual.pdf",
) -> StoredFile:
    return StoredFile(
        id=file_id,
        user_id=user_id,
        file_name=file_name,
        mime_type="application/pdf",
        size=12345,
        blob_key=f"uploads/{file_id}",
        status="processing",
        error=None,
        embedding_model=None,
        create_time=created,
        update_time=created,
    )


def passages(vectors: bool = True) -> list[FileChunk]:
    """Three passages, stored out of order; vectors exactly representable as float32."""
    return [
        FileChunk(2, "page", 3, 4, "Warranty: seven years.", [0.5, -1.25] if vectors else None),
        FileChunk(0, "page", 1, 1, "Shipping: two days, 送货.", [1.0, 0.0] if vectors else None),
        FileChunk(1, "page", 2, 3, "Cleaning: rinse monthly.", None),
    ]


async def test_a_new_file_round_trips_as_processing_without_text_or_passages(
    store: FileStore,
) -> None:
    added = new_file(file_name="Résumé 文件 (final).pdf")
    await store.add_file(added)

    got = await store.get_file("alice", "f-1")

    assert got == added
    assert got is not None
    assert got.create_time.utcoffset() == timedelta(0)
    assert await store.file_content("alice", "f-1") is None
    assert await store.file_chunks("alice", "f-1") == []


async def test_finishing_a_file_stores_its_status_text_and_passages_together(
    store: FileStore,
) -> None:
    await store.add_file(new_file())
    text = "Shipping: two days, 送货.\n\nCleaning: rinse monthly.\n\nWarranty: seven years."

    await store.finish_file(
        "f-1",
        FileOutcome(status="ready", content=text, chunks=passages(), embedding_model="embed-1"),
    )
    got = await store.get_file("alice", "f-1")

    assert got is not None
    assert (got.status, got.error, got.embedding_model) == ("ready", None, "embed-1")
    assert got.create_time == CREATED
    assert got.update_time > CREATED
    assert await store.file_content("alice", "f-1") == text
    assert await store.file_chunks("alice", "f-1") == sorted(passages(), key=lambda c: c.seq)


async def test_a_failed_file_keeps_the_reason_and_has_no_text(store: FileStore) -> None:
    await store.add_file(new_file())

    reason = "This pdf has no text layer (a scan?)."
    await store.finish_file("f-1", FileOutcome(status="failed", error=reason))
    got = await store.get_file("alice", "f-1")

    assert got is not None
    assert (got.status, got.error) == ("failed", reason)
    assert await store.file_content("alice", "f-1") is None
    assert await store.file_chunks("alice", "f-1") == []


async def test_a_full_size_embedding_comes_back_at_float32_precision(store: FileStore) -> None:
    await store.add_file(new_file())
    vector = [((n * 7919) % 1000) / 997 - 0.5 for n in range(1536)]
    chunk = FileChunk(0, "line", 1, 9, "text", vector)

    await store.finish_file("f-1", FileOutcome(status="ready", content="text", chunks=[chunk]))
    [got] = await store.file_chunks("alice", "f-1")

    assert got.vector == array("f", vector).tolist()


async def test_list_files_gives_only_the_users_own_newest_first(store: FileStore) -> None:
    later = CREATED + timedelta(seconds=1)
    for file in (
        new_file("f-old"),
        new_file("f-new-b", created=later),
        new_file("f-new-a", created=later),
        new_file("f-bob", user_id="bob", created=later + timedelta(seconds=1)),
    ):
        await store.add_file(file)

    listed = await store.list_files("alice")

    # Same time: by id, so pages of the list are stable.
    assert [f.id for f in listed] == ["f-new-a", "f-new-b", "f-old"]
    assert await store.list_files("carol") == []


async def test_another_users_file_is_not_found_nor_deleted(store: FileStore) -> None:
    await store.add_file(new_file())
    await store.finish_file(
        "f-1", FileOutcome(status="ready", content="secret", chunks=passages(vectors=False))
    )

    assert await store.get_file("bob", "f-1") is None
    assert await store.file_content("bob", "f-1") is None
    assert await store.file_chunks("bob", "f-1") == []
    assert await store.delete_file("bob", "f-1") is None
    assert await store.file_content("alice", "f-1") == "secret"
    assert len(await store.file_chunks("alice", "f-1")) == 3


async def test_deleting_a_file_removes_its_row_text_and_passages_and_gives_its_blob_key(
    store: FileStore,
) -> None:
    for file_id in ("f-1", "f-2"):
        await store.add_file(new_file(file_id))
        await store.finish_file(
            file_id, FileOutcome(status="ready", content=file_id, chunks=passages())
        )

    blob_key = await store.delete_file("alice", "f-1")

    assert blob_key == "uploads/f-1"
    assert await store.get_file("alice", "f-1") is None
    assert await store.file_content("alice", "f-1") is None
    assert await store.file_chunks("alice", "f-1") == []
    assert [f.id for f in await store.list_files("alice")] == ["f-2"]
    assert len(await store.file_chunks("alice", "f-2")) == 3
    assert await store.delete_file("alice", "f-1") is None
