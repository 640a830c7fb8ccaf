"""The `BlobStore` contract, run against every blob store (today the local directory).

What the file library counts on: bytes come back exactly as they went in, a
copy over the cap or one that fails keeps nothing, a missing blob is an error
before any byte, and deleting is safe twice. A store added beside
`LocalBlobStore` (S3-compatible, say) joins by adding a parameter to `blobs`.
The last tests are the local store's own: where its files may and may not go.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from app.store.blobs import CHUNK_BYTES, BlobNotFound, BlobStore, BlobTooLarge, LocalBlobStore

DATA = os.urandom(2 * CHUNK_BYTES + 12345)
"""More than two of the chunks a blob is streamed in, and not a whole number of them."""


@pytest.fixture(params=["local"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    return LocalBlobStore(tmp_path / "blobs")


class FailingSource(io.BytesIO):
    """A source that breaks after its first read, as a dropped upload does."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads = 0

    def read(self, size: int | None = -1) -> bytes:
        self.reads += 1
        if self.reads > 1:
            raise OSError("connection reset by peer")
        return super().read(size)


async def read_all(blobs: BlobStore, key: str) -> bytes:
    return b"".join([chunk async for chunk in await blobs.read(key)])


async def assert_absent(blobs: BlobStore, key: str) -> None:
    with pytest.raises(BlobNotFound):
        await blobs.read(key)
    with pytest.raises(BlobNotFound):
        async with blobs.local_path(key):
            pass


async def test_bytes_come_back_exactly_as_they_went_in(blobs: BlobStore) -> None:
    size = await blobs.put("uploads/f1", io.BytesIO(DATA), max_bytes=len(DATA))

    assert size == len(DATA)
    assert await read_all(blobs, "uploads/f1") == DATA


async def test_the_copy_starts_at_the_sources_current_position(blobs: BlobStore) -> None:
    source = io.BytesIO(b"HEADER" + DATA)
    source.seek(6)

    size = await blobs.put("uploads/f1", source, max_bytes=len(DATA))

    assert size == len(DATA)
    assert await read_all(blobs, "uploads/f1") == DATA


async def test_an_empty_blob_is_kept_and_read_back_empty(blobs: BlobStore) -> None:
    assert await blobs.put("uploads/empty", io.BytesIO(b""), max_bytes=10) == 0

    assert await read_all(blobs, "uploads/empty") == b""


async def test_a_source_longer_than_the_cap_is_refused_and_nothing_is_kept(
    blobs: BlobStore,
) -> None:
    with pytest.raises(BlobTooLarge):
        await blobs.put("uploads/f1", io.BytesIO(DATA), max_bytes=len(DATA) - 1)

    await assert_absent(blobs, "uploads/f1")


async def test_a_source_that_fails_midway_leaves_nothing(blobs: BlobStore) -> None:
    with pytest.raises(OSError, match="connection reset"):
        await blobs.put("uploads/f1", FailingSource(DATA), max_bytes=len(DATA))

    await assert_absent(blobs, "uploads/f1")


async def test_a_missing_blob_is_an_error_before_any_byte(blobs: BlobStore) -> None:
    await assert_absent(blobs, "uploads/never-stored")


async def test_a_local_path_holds_the_bytes_for_parsers_that_need_a_file(
    blobs: BlobStore,
) -> None:
    await blobs.put("uploads/f1", io.BytesIO(DATA), max_bytes=len(DATA))

    async with blobs.local_path("uploads/f1") as path:
        assert path.read_bytes() == DATA


async def test_delete_removes_the_blob_and_is_safe_to_repeat(blobs: BlobStore) -> None:
    await blobs.put("uploads/f1", io.BytesIO(b"one"), max_bytes=10)
    await blobs.put("uploads/f2", io.BytesIO(b"two"), max_bytes=10)

    await blobs.delete("uploads/f1")
    await blobs.delete("uploads/f1")
    await blobs.delete("uploads/never-stored")

    await assert_absent(blobs, "uploads/f1")
    assert await read_all(blobs, "uploads/f2") == b"two"


# The local directory's own rules.


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


async def test_failed_copies_leave_no_partial_file_in_the_directory(tmp_path: Path) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    with pytest.raises(BlobTooLarge):
        await blobs.put("uploads/big", io.BytesIO(DATA), max_bytes=1000)
    with pytest.raises(OSError, match="connection reset"):
        await blobs.put("uploads/cut", FailingSource(DATA), max_bytes=len(DATA))

    assert files_under(tmp_path) == []


@pytest.mark.parametrize("key", ["../outside", "/etc/passwd", "uploads/../../outside", "", "A"])
async def test_a_key_that_is_not_one_of_ours_is_refused(tmp_path: Path, key: str) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")

    with pytest.raises(ValueError, match="invalid blob key"):
        await blobs.put(key, io.BytesIO(b"x"), max_bytes=10)
    with pytest.raises(ValueError, match="invalid blob key"):
        await blobs.read(key)
    with pytest.raises(ValueError, match="invalid blob key"):
        await blobs.delete(key)

    assert files_under(tmp_path) == []


async def test_a_read_never_holds_the_whole_file_in_memory(tmp_path: Path) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    await blobs.put("uploads/f1", io.BytesIO(DATA), max_bytes=len(DATA))

    sizes = [len(chunk) async for chunk in await blobs.read("uploads/f1")]

    assert max(sizes) <= CHUNK_BYTES < len(DATA)
    assert sum(sizes) == len(DATA)
