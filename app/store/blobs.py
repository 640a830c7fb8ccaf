"""Where file bytes live: a small interface, and a local directory behind it.

The database keeps what a file is (store/files.py); a `BlobStore` keeps its
bytes under a key the service generates, never a name a client chose. The
interface is what an S3-compatible store could also offer (copy in with a
size cap, stream out, a local copy for parsers that need a path, delete), so
one can be added beside `LocalBlobStore` without touching the callers.

Left out: listing, partial reads, and metadata on the blob itself.

    BlobError           base
    ├── BlobTooLarge    the source was longer than the cap; nothing was kept
    └── BlobNotFound    no blob under that key
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO, Protocol

CHUNK_BYTES = 1024 * 1024
_KEY = re.compile(r"^[a-z0-9][a-z0-9_-]*(/[a-z0-9][a-z0-9_-]*)*$")


class BlobError(Exception):
    pass


class BlobTooLarge(BlobError):
    pass


class BlobNotFound(BlobError):
    pass


class BlobStore(Protocol):
    async def put(self, key: str, source: BinaryIO, max_bytes: int) -> int:
        """Copy `source` from its current position; return the size.

        Raises `BlobTooLarge`, keeping nothing, once more than `max_bytes` were read.
        """
        ...

    async def read(self, key: str) -> AsyncIterator[bytes]:
        """Open the blob (raising `BlobNotFound` here, before any byte) and stream its chunks."""
        ...

    def local_path(self, key: str) -> contextlib.AbstractAsyncContextManager[Path]:
        """A readable file holding the blob, for the duration of the block."""
        ...

    async def delete(self, key: str) -> None:
        """Remove the blob; a missing one is not an error (deleting twice is safe)."""
        ...


class LocalBlobStore:
    """Blobs as files under one directory (`DATA_DIR/files` by default).

    A blob is written to a temporary name and renamed into place when
    complete, so a reader never sees half a file and a failed copy leaves
    nothing behind. File I/O runs in a worker thread, off the event loop.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    async def put(self, key: str, source: BinaryIO, max_bytes: int) -> int:
        return await asyncio.to_thread(self._put, self._path(key), source, max_bytes)

    async def read(self, key: str) -> AsyncIterator[bytes]:
        try:
            handle = await asyncio.to_thread(self._path(key).open, "rb")
        except FileNotFoundError as exc:
            raise BlobNotFound(key) from exc
        return _chunks(handle)

    @contextlib.asynccontextmanager
    async def local_path(self, key: str) -> AsyncIterator[Path]:
        path = self._path(key)
        if not await asyncio.to_thread(path.is_file):
            raise BlobNotFound(key)
        yield path

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._path(key).unlink, missing_ok=True)

    def _path(self, key: str) -> Path:
        # Keys are ours, but a key that could climb out of the root is refused anyway.
        if not _KEY.match(key):
            raise ValueError(f"invalid blob key: {key!r}")
        return self.root / key

    @staticmethod
    def _put(path: Path, source: BinaryIO, max_bytes: int) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
        size = 0
        try:
            with partial.open("wb") as out:
                while chunk := source.read(CHUNK_BYTES):
                    size += len(chunk)
                    if size > max_bytes:
                        raise BlobTooLarge(f"more than {max_bytes} bytes")
                    out.write(chunk)
            os.replace(partial, path)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return size


async def _chunks(handle: BinaryIO) -> AsyncIterator[bytes]:
    try:
        while chunk := await asyncio.to_thread(handle.read, CHUNK_BYTES):
            yield chunk
    finally:
        # Closed here, not in a thread: when the client goes, the response's cancel scope
        # cancels every await in this `finally` too, and the file would stay open until
        # the garbage collector found it. Closing a file opened for reading does not block.
        handle.close()
