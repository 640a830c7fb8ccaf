"""What a user set on their conversations: titles, pins and projects, stored only once they
set one (a project also when its first turn is asked in one).

A conversation nobody renamed is titled by its first question cut to
`DEFAULT_TITLE_CHARS` (the active path's: an edited first question renames
it), derived when it is read, and one nobody pinned is
not: a turn writes nothing here, so it keeps its two writes
(tests/integration/test_turn_cost.py). Setting either is one statement that
stores it only if the conversation has a turn of the caller's, so another
user's conversation is simply not found; the other mark is left as it was.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import String, delete, exists, literal, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.base import UNSET, Marks, Unset
from app.store.columns import UTCDateTime
from app.store.db import Database
from app.store.models import AI_CONVERSATION_TITLE as TITLES
from app.store.models import AI_SESSION as TURNS

DEFAULT_TITLE_CHARS = 100


def default_title(question: str) -> str:
    """The title of a conversation never renamed: its first question, cut."""
    return question[:DEFAULT_TITLE_CHARS]


def title_of(stored: str | None, first_question: str) -> str:
    return stored if stored is not None else default_title(first_question)


async def delete_title(conn: AsyncConnection, user_id: str, conversation_id: str) -> None:
    """In the caller's transaction: the conversation's turns go, so do its title and pin."""
    await conn.execute(
        delete(TITLES).where(
            TITLES.c.user_id == user_id, TITLES.c.conversation_id == conversation_id
        )
    )


class SqlTitles:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def mark(
        self,
        user_id: str,
        conversation_id: str,
        *,
        title: str | None = None,
        pinned: bool | None = None,
        project_id: str | Unset | None = UNSET,
    ) -> Marks | None:
        """Store what is given (a title; pinned or not; a project or none), keep the rest;
        the marks as they are now, or None (nothing stored) when the caller has no such
        conversation."""
        values: dict[str, Any] = {}
        if title is not None:
            values["title"] = literal(title, String)
        if pinned is not None:
            values["pinned_at"] = literal(datetime.now(UTC) if pinned else None, UTCDateTime())
        if not isinstance(project_id, Unset):
            values["project_id"] = literal(project_id, String)
        has_turn = exists().where(TURNS.c.user_id == user_id, TURNS.c.session_id == conversation_id)
        row = select(
            literal(user_id, String), literal(conversation_id, String), *values.values()
        ).where(has_turn)
        stmt = self._db.upsert(TITLES).from_select(["user_id", "conversation_id", *values], row)
        stmt = stmt.on_conflict_do_update(
            index_elements=[TITLES.c.user_id, TITLES.c.conversation_id],
            set_={name: getattr(stmt.excluded, name) for name in values},
        ).returning(TITLES.c.title, TITLES.c.pinned_at, TITLES.c.project_id)
        async with self._db.statement() as conn:
            stored = (await conn.execute(stmt)).one_or_none()
        return None if stored is None else _marks(stored)

    async def place(self, user_id: str, conversation_id: str, project_id: str) -> None:
        """Put a new conversation in a project: its first turn is not stored yet, so unlike
        `mark` this does not look for one (a conversation with no turn is listed nowhere)."""
        stmt = self._db.upsert(TITLES).values(
            user_id=user_id, conversation_id=conversation_id, project_id=project_id
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[TITLES.c.user_id, TITLES.c.conversation_id],
            set_={"project_id": stmt.excluded.project_id},
        )
        async with self._db.statement() as conn:
            await conn.execute(stmt)

    async def marks(self, user_id: str, conversation_id: str) -> Marks:
        """What the user set on the conversation (nothing, when they never did)."""
        stmt = select(TITLES.c.title, TITLES.c.pinned_at, TITLES.c.project_id).where(
            TITLES.c.user_id == user_id, TITLES.c.conversation_id == conversation_id
        )
        async with self._db.statement() as conn:
            stored = (await conn.execute(stmt)).one_or_none()
        return Marks() if stored is None else _marks(stored)


def _marks(stored: Any) -> Marks:
    return Marks(stored.title, stored.pinned_at is not None, stored.project_id)
