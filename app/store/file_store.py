"""`FileStore` on SQL (SQLite or PostgreSQL): uploaded files' metadata, text and passages.

A file's rows change together: its status, extracted text and chunks are
written in one transaction, and deleting it removes the chunks and the row
in one transaction too (`delete_file_rows`, which the turn store also
uses when a conversation takes its files with it). Bytes are not here: the
blob store keeps them and callers remove them after the commit.

Vectors are stored as little-endian float32 bytes: a quarter of the size of
JSON text, decoded without parsing, and the same on both databases.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast

from sqlalchemy import RowMapping, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.base import FileChunk, FileOutcome
from app.store.db import Database
from app.store.models import AI_FILE as FILES
from app.store.models import AI_FILE_CHUNK as CHUNKS
from app.store.models import StoredFile
from app.store.project_models import PROJECT_FILE as PROJECT_FILES

_METADATA = [c for c in FILES.c if c.name != "content"]
"""Every column but the text, which can be megabytes and only `/file/content` reads."""


class SqlFileStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add_file(self, file: StoredFile) -> None:
        values = {column.name: getattr(file, column.name) for column in FILES.c}
        async with self._db.statement() as conn:
            await conn.execute(insert(FILES), values)

    async def finish_file(self, file_id: str, outcome: FileOutcome) -> None:
        rows = [
            {
                "file_id": file_id,
                "seq": chunk.seq,
                "unit": chunk.unit,
                "first": chunk.first,
                "last": chunk.last,
                "text": chunk.text,
                "vector": None if chunk.vector is None else pack_vector(chunk.vector),
            }
            for chunk in outcome.chunks
        ]
        stmt = (
            update(FILES)
            .where(FILES.c.id == file_id)
            .values(
                status=outcome.status,
                error=outcome.error,
                content=outcome.content,
                embedding_model=outcome.embedding_model,
                ocr=outcome.ocr,
                update_time=datetime.now(UTC),
            )
        )
        async with self._db.begin() as conn:
            await conn.execute(stmt)
            if rows:
                await conn.execute(insert(CHUNKS), rows)

    async def get_file(self, user_id: str, file_id: str) -> StoredFile | None:
        stmt = select(*_METADATA).where(FILES.c.user_id == user_id, FILES.c.id == file_id)
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().first()
        return None if row is None else _file(row)

    async def list_files(self, user_id: str) -> list[StoredFile]:
        stmt = (
            select(*_METADATA)
            .where(FILES.c.user_id == user_id)
            .order_by(FILES.c.create_time.desc(), FILES.c.id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_file(row) for row in rows]

    async def file_content(self, user_id: str, file_id: str) -> str | None:
        stmt = select(FILES.c.content).where(FILES.c.user_id == user_id, FILES.c.id == file_id)
        async with self._db.statement() as conn:
            return cast(str | None, (await conn.execute(stmt)).scalar_one_or_none())

    async def file_chunks(self, user_id: str, file_id: str) -> list[FileChunk]:
        stmt = (
            select(
                CHUNKS.c.seq,
                CHUNKS.c.unit,
                CHUNKS.c.first,
                CHUNKS.c.last,
                CHUNKS.c.text,
                CHUNKS.c.vector,
            )
            .join(FILES, FILES.c.id == CHUNKS.c.file_id)
            .where(FILES.c.user_id == user_id, CHUNKS.c.file_id == file_id)
            .order_by(CHUNKS.c.seq)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [
            FileChunk(
                seq=row["seq"],
                unit=row["unit"],
                first=row["first"],
                last=row["last"],
                text=row["text"],
                vector=None if row["vector"] is None else unpack_vector(row["vector"]),
            )
            for row in rows
        ]

    async def delete_file(self, user_id: str, file_id: str) -> str | None:
        find = select(FILES.c.blob_key).where(FILES.c.user_id == user_id, FILES.c.id == file_id)
        async with self._db.begin() as conn:
            blob_key = (await conn.execute(find)).scalar_one_or_none()
            if blob_key is not None:
                await delete_file_rows(conn, [file_id])
        return cast(str | None, blob_key)


async def delete_file_rows(conn: AsyncConnection, file_ids: Sequence[str]) -> None:
    """Delete files' chunks and project attachments, then the files, inside the caller's
    transaction."""
    if not file_ids:
        return
    await conn.execute(delete(CHUNKS).where(CHUNKS.c.file_id.in_(file_ids)))
    await conn.execute(delete(PROJECT_FILES).where(PROJECT_FILES.c.file_id.in_(file_ids)))
    await conn.execute(delete(FILES).where(FILES.c.id.in_(file_ids)))


def pack_vector(vector: Sequence[float]) -> bytes:
    values = array("f", vector)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def unpack_vector(data: bytes) -> list[float]:
    values = array("f")
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


def _file(row: RowMapping) -> StoredFile:
    """The row as its table model; its columns already gave every value its type."""
    return StoredFile.model_construct(**row)
