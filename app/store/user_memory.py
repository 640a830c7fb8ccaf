"""User memory on SQL: a user's items and their switch (app/store/memory_models.py).

Every statement filters on the user in SQL, so another user's item is simply not
found, whoever asks. A turn reads the user's switch and all their items in one
statement (`for_turn`): they are few (`MEMORY_MAX_ITEMS`), read through the
`(user_id, create_time)` index, and ranked in process. Adding checks the cap
in the same statement as the insert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    FromClause,
    String,
    bindparam,
    delete,
    func,
    literal,
    literal_column,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.db import Database
from app.store.file_store import pack_vector, unpack_vector
from app.store.memory_models import USER_MEMORY as MEMORY_ITEMS
from app.store.memory_models import USER_MEMORY_SETTING as MEMORY_SETTINGS
from app.store.memory_models import UserMemoryItem

_SHOWN = [c for c in MEMORY_ITEMS.c if c.name != "vector"]


@dataclass(frozen=True, slots=True)
class Scope:
    """Which of a user's items a change may touch: the general ones and one project's
    (a turn's `remember`: a project's turn never changes another project's items)."""

    project_id: str | None

    def clause(self) -> ColumnElement[bool]:
        general = MEMORY_ITEMS.c.project_id.is_(None)
        return (
            general
            if self.project_id is None
            else or_(general, MEMORY_ITEMS.c.project_id == self.project_id)
        )


@dataclass(frozen=True, slots=True)
class TurnMemory:
    """What a turn reads: the user's switch, and every item of theirs with its vector."""

    enabled: bool
    items: list[tuple[UserMemoryItem, list[float] | None]]


class SqlUserMemory:
    def __init__(self, db: Database) -> None:
        self._db = db
        columns, source = turn_memory_part(bindparam("user_id", type_=String))
        # Built and compiled once: building it is most of what a read costs (bench/README.md).
        self._for_turn = db.prepare(
            select(*columns).select_from(source).order_by(*TURN_MEMORY_ORDER)
        )

    async def items(self, user_id: str, project_id: str | None = None) -> list[UserMemoryItem]:
        """The user's items, newest first; with `project_id`, that project's only."""
        stmt = select(*_SHOWN).where(MEMORY_ITEMS.c.user_id == user_id)
        if project_id is not None:
            stmt = stmt.where(MEMORY_ITEMS.c.project_id == project_id)
        stmt = stmt.order_by(MEMORY_ITEMS.c.create_time.desc(), MEMORY_ITEMS.c.id)
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [UserMemoryItem.model_construct(**row) for row in rows]

    async def add(
        self, item: UserMemoryItem, vector: Sequence[float] | None, max_items: int
    ) -> bool:
        """Store the item unless the user has `max_items` already; False when full."""
        values = {c.name: getattr(item, c.name) for c in MEMORY_ITEMS.c if c.name != "vector"}
        values["vector"] = None if vector is None else pack_vector(vector)
        count = select(func.count()).where(MEMORY_ITEMS.c.user_id == item.user_id).scalar_subquery()
        row = select(*(literal(v, MEMORY_ITEMS.c[name].type) for name, v in values.items())).where(
            count < max_items
        )
        stmt = MEMORY_ITEMS.insert().from_select(list(values), row)
        async with self._db.begin() as conn:
            return bool((await conn.execute(stmt)).rowcount)

    async def change(
        self,
        user_id: str,
        item_id: str,
        content: str,
        vector: Sequence[float] | None,
        embedding_model: str | None,
        scope: Scope | None = None,
    ) -> tuple[UserMemoryItem, UserMemoryItem] | None:
        """Replace the item's text; the item before and after, or None when not the user's
        (or outside `scope`)."""
        async with self._db.begin() as conn:
            before = await _one(conn, user_id, item_id, scope)
            if before is None:
                return None
            now = datetime.now(UTC)
            await conn.execute(
                update(MEMORY_ITEMS)
                .where(MEMORY_ITEMS.c.id == item_id, MEMORY_ITEMS.c.user_id == user_id)
                .values(
                    content=content,
                    vector=None if vector is None else pack_vector(vector),
                    embedding_model=embedding_model,
                    update_time=now,
                )
            )
        after = before.model_copy(update={"content": content, "update_time": now})
        return before, after

    async def delete(
        self, user_id: str, item_id: str, scope: Scope | None = None
    ) -> UserMemoryItem | None:
        """Delete the item; it as it was, or None when not the user's (or outside `scope`)."""
        where = [MEMORY_ITEMS.c.id == item_id, MEMORY_ITEMS.c.user_id == user_id]
        if scope is not None:
            where.append(scope.clause())
        async with self._db.statement() as conn:
            row = (
                await conn.execute(delete(MEMORY_ITEMS).where(*where).returning(*_SHOWN))
            ).mappings()
            found = row.one_or_none()
        return None if found is None else UserMemoryItem.model_construct(**found)

    async def delete_all(self, user_id: str) -> int:
        async with self._db.statement() as conn:
            return (
                await conn.execute(delete(MEMORY_ITEMS).where(MEMORY_ITEMS.c.user_id == user_id))
            ).rowcount

    async def enabled(self, user_id: str) -> bool:
        stmt = select(MEMORY_SETTINGS.c.enabled).where(MEMORY_SETTINGS.c.user_id == user_id)
        async with self._db.statement() as conn:
            stored = (await conn.execute(stmt)).scalar_one_or_none()
        return True if stored is None else bool(stored)

    async def set_enabled(self, user_id: str, enabled: bool) -> None:
        stmt = self._db.upsert(MEMORY_SETTINGS).values(
            user_id=user_id, enabled=enabled, update_time=datetime.now(UTC)
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[MEMORY_SETTINGS.c.user_id],
            set_={"enabled": stmt.excluded.enabled, "update_time": stmt.excluded.update_time},
        )
        async with self._db.statement() as conn:
            await conn.execute(stmt)

    async def for_turn(self, user_id: str) -> TurnMemory:
        """The switch and, when on, every item, in one statement (`turn_memory_part`)."""
        return turn_memory(await self._db.run(self._for_turn, {"user_id": user_id}))


TURN_MEMORY_ORDER: tuple[ColumnElement[Any], ...] = (
    literal_column("memory_create_time").desc(),
    literal_column("memory_id"),
)
"""The items newest first, by the labels `turn_memory_part` gives them."""


def turn_memory_part(
    user: ColumnElement[str],
) -> tuple[list[ColumnElement[Any]], FromClause[Any]]:
    """The columns and FROM of a turn's memory read of the `user` (a literal, or a parameter
    of a statement built once): a row per item (one row of NULLs for none) beside the
    switch, which no row of the setting means on; each column labelled `memory_<name>`, so
    the read can ride beside another (a turn's project: store/projects.py).
    """
    switch = (
        select(MEMORY_SETTINGS.c.enabled).where(MEMORY_SETTINGS.c.user_id == user).scalar_subquery()
    )
    on = func.coalesce(switch, true())
    anchor = select(user.label("owner")).subquery("owner")
    columns: list[ColumnElement[Any]] = [
        on.label("memory_enabled"),
        *(c.label(f"memory_{c.name}") for c in MEMORY_ITEMS.c),
    ]
    return columns, anchor.outerjoin(MEMORY_ITEMS, (MEMORY_ITEMS.c.user_id == anchor.c.owner) & on)


def turn_memory(rows: Sequence[Mapping[Any, Any]]) -> TurnMemory:
    """What `turn_memory_part`'s rows say."""
    enabled = bool(rows[0]["memory_enabled"]) if rows else True
    items = [
        (
            UserMemoryItem.model_construct(**{c.name: row[f"memory_{c.name}"] for c in _SHOWN}),
            None if row["memory_vector"] is None else unpack_vector(row["memory_vector"]),
        )
        for row in rows
        if row["memory_id"] is not None
    ]
    return TurnMemory(enabled, items)


async def delete_project_memory(conn: AsyncConnection, user_id: str, project_id: str) -> None:
    """In the caller's transaction: a deleted project's items go with it."""
    await conn.execute(
        delete(MEMORY_ITEMS).where(
            MEMORY_ITEMS.c.user_id == user_id, MEMORY_ITEMS.c.project_id == project_id
        )
    )


async def _one(
    conn: AsyncConnection, user_id: str, item_id: str, scope: Scope | None
) -> UserMemoryItem | None:
    where: list[Any] = [MEMORY_ITEMS.c.id == item_id, MEMORY_ITEMS.c.user_id == user_id]
    if scope is not None:
        where.append(scope.clause())
    row = (await conn.execute(select(*_SHOWN).where(*where))).mappings().one_or_none()
    return None if row is None else UserMemoryItem.model_construct(**row)
