"""Limits an admin set for one user, kept in the database so every instance applies them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, select

from app.store.db import Database
from app.store.models import USER_LIMIT as LIMITS


@dataclass(frozen=True, slots=True)
class LimitOverride:
    """None keeps the setting's value for that limit."""

    max_streams: int | None = None
    streams_per_minute: int | None = None
    uploads_per_minute: int | None = None

    def empty(self) -> bool:
        return (self.max_streams, self.streams_per_minute, self.uploads_per_minute) == (
            None,
            None,
            None,
        )


class SqlUserLimits:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def all(self) -> dict[str, LimitOverride]:
        query = select(
            LIMITS.c.user_id,
            LIMITS.c.max_streams,
            LIMITS.c.streams_per_minute,
            LIMITS.c.uploads_per_minute,
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(query)).all()
        return {row.user_id: LimitOverride(*row[1:]) for row in rows}

    async def put(self, user_id: str, override: LimitOverride) -> None:
        """Store the user's limits; all None removes them (the settings apply again)."""
        async with self._db.statement() as conn:
            if override.empty():
                await conn.execute(delete(LIMITS).where(LIMITS.c.user_id == user_id))
                return
            values = {
                "max_streams": override.max_streams,
                "streams_per_minute": override.streams_per_minute,
                "uploads_per_minute": override.uploads_per_minute,
                "updated_at": datetime.now(UTC),
            }
            stmt = self._db.upsert(LIMITS).values(user_id=user_id, **values)
            stmt = stmt.on_conflict_do_update(index_elements=[LIMITS.c.user_id], set_=values)
            await conn.execute(stmt)
