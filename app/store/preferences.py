"""A user's preferences, in the database so they follow the user to every device and browser.

One row per user who chose something, read and written by the owner only:
every statement is keyed by the caller's id, so no one reads another's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select

from app.store.db import Database
from app.store.models import USER_PREFERENCE as PREFERENCES


@dataclass(frozen=True, slots=True)
class Preferences:
    model: str | None = None
    """The model the user picked last; None: each agent's own (`AGENT_MODELS`)."""


class SqlPreferences:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def of_user(self, user_id: str) -> Preferences:
        query = select(PREFERENCES.c.model).where(PREFERENCES.c.user_id == user_id)
        async with self._db.statement() as conn:
            row = (await conn.execute(query)).one_or_none()
        return Preferences() if row is None else Preferences(model=row.model)

    async def put(self, user_id: str, preferences: Preferences) -> Preferences:
        """Store the user's preferences, replacing what they were."""
        values = {"model": preferences.model, "updated_at": datetime.now(UTC)}
        stmt = self._db.upsert(PREFERENCES).values(user_id=user_id, **values)
        stmt = stmt.on_conflict_do_update(index_elements=[PREFERENCES.c.user_id], set_=values)
        async with self._db.statement() as conn:
            await conn.execute(stmt)
        return preferences
