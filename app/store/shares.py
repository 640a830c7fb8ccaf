"""Conversations shared by link: read-only, by anyone holding the link, without signing in.

A share is a row naming the conversation and its last shared turn; the link
shows the path from the first question to that turn, as it is stored now (an
answer regenerated on another branch is not in it; a turn deleted since takes
the link with it). Sharing again keeps the token and moves the share to the
conversation's newest active turn, as other chat services' "update link" does;
unsharing deletes the row, so the link answers 404 at once, on every instance.

The token is the only secret: 128 random bits, so links cannot be guessed, and
it is looked up by equality on the primary key.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.base import TurnStore
from app.store.db import Database
from app.store.models import AI_SHARE as SHARES
from app.store.models import StoredTurn

TOKEN_BYTES = 16


@dataclass(frozen=True, slots=True)
class Share:
    token: str
    turn_id: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class SharedConversation:
    user_id: str
    conversation_id: str
    shared_at: datetime
    turns: list[StoredTurn]
    """The first question to the shared turn."""


async def delete_share(conn: AsyncConnection, user_id: str, conversation_id: str) -> bool:
    """End the conversation's link (in the caller's transaction, when the conversation
    goes too); False when it had none."""
    stmt = delete(SHARES).where(
        SHARES.c.user_id == user_id, SHARES.c.conversation_id == conversation_id
    )
    return bool((await conn.execute(stmt)).rowcount)


class SqlShares:
    def __init__(self, db: Database, store: TurnStore) -> None:
        self._db = db
        self._store = store

    async def share(self, user_id: str, conversation_id: str) -> Share | None:
        """Share the conversation up to its active leaf (the same token if it was shared
        before); None when the user has no such conversation."""
        tree = await self._store.get_tree(user_id, conversation_id)
        leaf = tree.leaf_id
        if leaf is None:
            return None
        stmt = self._db.upsert(SHARES).values(
            token=secrets.token_urlsafe(TOKEN_BYTES),
            user_id=user_id,
            conversation_id=conversation_id,
            turn_id=leaf,
            created_at=datetime.now(UTC),
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[SHARES.c.user_id, SHARES.c.conversation_id],
            set_={"turn_id": stmt.excluded.turn_id, "created_at": stmt.excluded.created_at},
        ).returning(SHARES.c.token, SHARES.c.turn_id, SHARES.c.created_at)
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).one()
        return Share(row.token, row.turn_id, row.created_at)

    async def of(self, user_id: str, conversation_id: str) -> Share | None:
        """The conversation's share, if it has one."""
        stmt = select(SHARES.c.token, SHARES.c.turn_id, SHARES.c.created_at).where(
            SHARES.c.user_id == user_id, SHARES.c.conversation_id == conversation_id
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).one_or_none()
        return None if row is None else Share(row.token, row.turn_id, row.created_at)

    async def unshare(self, user_id: str, conversation_id: str) -> bool:
        """Stop sharing; False when it was not shared."""
        async with self._db.statement() as conn:
            return await delete_share(conn, user_id, conversation_id)

    async def shared(self, token: str) -> SharedConversation | None:
        """What the link shows; None when there is no such link, or its turn is gone."""
        stmt = select(
            SHARES.c.user_id, SHARES.c.conversation_id, SHARES.c.turn_id, SHARES.c.created_at
        ).where(SHARES.c.token == token)
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).one_or_none()
        if row is None:
            return None
        tree = await self._store.get_tree(row.user_id, row.conversation_id)
        if row.turn_id not in tree:
            return None
        return SharedConversation(
            row.user_id, row.conversation_id, row.created_at, tree.path(row.turn_id)
        )
