"""Conversation titles: the user's own, stored only when they rename one.

A conversation nobody renamed is titled by its first question cut to
`DEFAULT_TITLE_CHARS`, derived when it is read: a turn writes nothing here,
so it keeps its two writes (tests/integration/test_turn_cost.py). A
rename is one statement that stores the title only if the conversation has
a turn of the caller's, so another user's conversation is simply not found.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import String, delete, exists, literal, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.db import Database
from app.store.models import AI_CONVERSATION_TITLE as TT
from app.store.models import AI_SESSION as T

DEFAULT_TITLE_CHARS = 100


def default_title(question: str) -> str:
    """The title of a conversation never renamed: its first question, cut."""
    return question[:DEFAULT_TITLE_CHARS]


def title_of(stored: str | None, first_question: str) -> str:
    return stored if stored is not None else default_title(first_question)


async def delete_title(conn: AsyncConnection, user_id: str, conversation_id: str) -> None:
    """In the caller's transaction: the conversation's turns go, so does its title."""
    await conn.execute(
        delete(TT).where(TT.c.user_id == user_id, TT.c.conversation_id == conversation_id)
    )


class SqlTitles:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._insert: Any = postgresql.insert if db.dialect.name == "postgresql" else sqlite.insert

    async def rename(self, user_id: str, conversation_id: str, title: str) -> bool:
        """Store the title; False (nothing stored) when the caller has no such conversation."""
        has_turn = exists().where(T.c.user_id == user_id, T.c.session_id == conversation_id)
        row = select(
            literal(user_id, String), literal(conversation_id, String), literal(title, String)
        ).where(has_turn)
        stmt = self._insert(TT).from_select(["user_id", "conversation_id", "title"], row)
        stmt = stmt.on_conflict_do_update(
            index_elements=[TT.c.user_id, TT.c.conversation_id],
            set_={"title": stmt.excluded.title},
        )
        async with self._db.statement() as conn:
            return bool((await conn.execute(stmt)).rowcount)

    async def title(self, user_id: str, conversation_id: str) -> str | None:
        """The title the user gave, or None when they never renamed it."""
        stmt = select(TT.c.title).where(
            TT.c.user_id == user_id, TT.c.conversation_id == conversation_id
        )
        async with self._db.statement() as conn:
            stored: str | None = (await conn.execute(stmt)).scalar_one_or_none()
        return stored
