"""Keys users make and revoke themselves, kept as their SHA-256 only.

A key is 32 random bytes (URL-safe base64 after `dk_`): far too many to guess,
so one unsalted SHA-256 is enough to keep it, and a caller's key is found by
its digest through a unique index. Each query filters on the owner, so
another user's key id is simply not found.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, insert, or_, select, update

from app.config import key_digest
from app.store.db import Database
from app.store.models import AUTH_KEY as KEYS

KEY_PREFIX = "dk_"
SHOWN_CHARS = 10
"""Characters of a key kept in the clear (`prefix`), to recognise it by in a list."""
LAST_USED_EVERY = timedelta(minutes=1)
"""`last_used_at` is written at most this often per key, not on every request."""


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: str
    name: str | None
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None


@dataclass(frozen=True, slots=True)
class MadeKey:
    info: KeyInfo
    key: str
    """The key itself: shown this once, never stored."""


def looks_like_made_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


class SqlAuthKeys:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def make(self, user_id: str, name: str | None, expires_at: datetime | None) -> MadeKey:
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        info = KeyInfo(
            id=uuid.uuid4().hex,
            name=name,
            prefix=key[:SHOWN_CHARS],
            created_at=datetime.now(UTC),
            expires_at=expires_at,
            last_used_at=None,
        )
        async with self._db.statement() as conn:
            await conn.execute(
                insert(KEYS).values(
                    id=info.id,
                    user_id=user_id,
                    name=name,
                    prefix=info.prefix,
                    digest=key_digest(key),
                    created_at=info.created_at,
                    expires_at=expires_at,
                )
            )
        return MadeKey(info, key)

    async def of_user(self, user_id: str) -> list[KeyInfo]:
        query = (
            select(
                KEYS.c.id,
                KEYS.c.name,
                KEYS.c.prefix,
                KEYS.c.created_at,
                KEYS.c.expires_at,
                KEYS.c.last_used_at,
            )
            .where(KEYS.c.user_id == user_id)
            .order_by(KEYS.c.created_at)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(query)).all()
        return [KeyInfo(*row) for row in rows]

    async def revoke(self, user_id: str, key_id: str) -> bool:
        """False when the user has no such key."""
        async with self._db.statement() as conn:
            done = await conn.execute(
                delete(KEYS).where(KEYS.c.user_id == user_id, KEYS.c.id == key_id)
            )
        return bool(done.rowcount)

    async def owner(self, key: str) -> str | None:
        """The user of a live key (not revoked, not expired); None for any other string."""
        now = datetime.now(UTC)
        query = select(KEYS.c.id, KEYS.c.user_id, KEYS.c.expires_at, KEYS.c.last_used_at).where(
            KEYS.c.digest == key_digest(key)
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(query)).first()
            if row is None or (row.expires_at is not None and row.expires_at <= now):
                return None
            if row.last_used_at is None or now - row.last_used_at >= LAST_USED_EVERY:
                await conn.execute(
                    update(KEYS)
                    .where(
                        KEYS.c.id == row.id,
                        or_(
                            KEYS.c.last_used_at.is_(None),
                            KEYS.c.last_used_at < now - LAST_USED_EVERY,
                        ),
                    )
                    .values(last_used_at=now)
                )
        return str(row.user_id)
