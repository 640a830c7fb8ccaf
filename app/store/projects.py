"""Projects on SQL: a user's projects, their attached files, and what a turn needs of one.

Every statement filters on the user in SQL, so another user's project is simply not
found. A conversation's project is its mark in `ai_conversation_title` (titles.py);
`for_turn` reads that mark, the project and its files in one statement, with the user's
memory beside them when the turn reads it, once per turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Select,
    String,
    bindparam,
    cast,
    delete,
    exists,
    func,
    literal,
    null,
    select,
    union_all,
    update,
)

from app.store.db import Database
from app.store.models import AI_CONVERSATION_TITLE as TITLES
from app.store.models import AI_FILE as FILES
from app.store.models import AI_SESSION as TURNS
from app.store.models import StoredFile
from app.store.project_models import PROJECT as PROJECTS
from app.store.project_models import PROJECT_FILE as PROJECT_FILES
from app.store.project_models import StoredProject
from app.store.schedules import delete_project_schedules
from app.store.user_memory import (
    TURN_MEMORY_ORDER,
    TurnMemory,
    delete_project_memory,
    turn_memory,
    turn_memory_part,
)

_FILE_COLUMNS = [c for c in FILES.c if c.name != "content"]


@dataclass(frozen=True, slots=True)
class TurnProject:
    """A turn's project as its start reads it."""

    project: StoredProject | None
    """The project asked for (`projectId`), else the conversation's; None: no such project
    of the user's, or none."""
    file_ids: list[str] = field(default_factory=list)
    """Its attached files."""
    placed: str | None = None
    """The project the conversation is in now (its mark); None: none."""
    asked: bool = False
    """The conversation has turns already."""
    memory: TurnMemory | None = None
    """The user's memory, when asked for with it."""


class SqlProjects:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._for_turn = {
            (named, memory): db.prepare(_for_turn(named, memory))
            for named in (False, True)
            for memory in (False, True)
        }

    async def add(self, project: StoredProject) -> None:
        values = {c.name: getattr(project, c.name) for c in PROJECTS.c}
        async with self._db.statement() as conn:
            await conn.execute(PROJECTS.insert().values(values))

    async def of_user(self, user_id: str) -> list[StoredProject]:
        """The user's projects, newest first."""
        stmt = (
            select(PROJECTS)
            .where(PROJECTS.c.user_id == user_id)
            .order_by(PROJECTS.c.create_time.desc(), PROJECTS.c.project_id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [StoredProject.model_construct(**row) for row in rows]

    async def get(self, user_id: str, project_id: str) -> StoredProject | None:
        stmt = select(PROJECTS).where(
            PROJECTS.c.user_id == user_id, PROJECTS.c.project_id == project_id
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else StoredProject.model_construct(**row)

    async def change(
        self, user_id: str, project_id: str, values: dict[str, Any]
    ) -> StoredProject | None:
        """Set the given columns; the project as it is now, or None when not the user's."""
        stmt = (
            update(PROJECTS)
            .where(PROJECTS.c.user_id == user_id, PROJECTS.c.project_id == project_id)
            .values({**values, "update_time": datetime.now(UTC)})
            .returning(*PROJECTS.c)
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else StoredProject.model_construct(**row)

    async def files(self, user_id: str, project_id: str) -> list[StoredFile]:
        """The files attached to the project, in the order they were attached."""
        stmt = (
            select(*_FILE_COLUMNS)
            .join(PROJECT_FILES, PROJECT_FILES.c.file_id == FILES.c.id)
            .where(
                PROJECT_FILES.c.user_id == user_id,
                PROJECT_FILES.c.project_id == project_id,
                FILES.c.user_id == user_id,
            )
            .order_by(PROJECT_FILES.c.create_time, FILES.c.id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [StoredFile.model_construct(**row) for row in rows]

    async def conversations(self, user_id: str, project_id: str) -> list[str]:
        """The ids of the project's conversations (those with turns)."""
        has_turn = exists().where(
            TURNS.c.user_id == user_id, TURNS.c.session_id == TITLES.c.conversation_id
        )
        stmt = select(TITLES.c.conversation_id).where(
            TITLES.c.user_id == user_id, TITLES.c.project_id == project_id, has_turn
        )
        async with self._db.statement() as conn:
            return list((await conn.execute(stmt)).scalars().all())

    async def count_conversations(self, user_id: str, project_id: str) -> int:
        has_turn = exists().where(
            TURNS.c.user_id == user_id, TURNS.c.session_id == TITLES.c.conversation_id
        )
        stmt = select(func.count()).where(
            TITLES.c.user_id == user_id, TITLES.c.project_id == project_id, has_turn
        )
        async with self._db.statement() as conn:
            return int((await conn.execute(stmt)).scalar_one())

    async def attach(self, user_id: str, project_id: str, file_id: str) -> bool:
        """Attach the user's file (again: no change); False when the project or the file is
        not the user's."""
        mine = exists().where(PROJECTS.c.user_id == user_id, PROJECTS.c.project_id == project_id)
        theirs = exists().where(FILES.c.user_id == user_id, FILES.c.id == file_id)
        attached = exists().where(
            PROJECT_FILES.c.project_id == project_id, PROJECT_FILES.c.file_id == file_id
        )
        row = select(
            literal(project_id, String),
            literal(file_id, String),
            literal(user_id, String),
            literal(datetime.now(UTC), PROJECT_FILES.c.create_time.type),
        ).where(mine, theirs, ~attached)
        stmt = PROJECT_FILES.insert().from_select(
            ["project_id", "file_id", "user_id", "create_time"], row
        )
        async with self._db.begin() as conn:
            await conn.execute(stmt)
            found = await conn.execute(select(mine & theirs))
            return bool(found.scalar_one())

    async def detach(self, user_id: str, project_id: str, file_id: str) -> bool:
        stmt = delete(PROJECT_FILES).where(
            PROJECT_FILES.c.user_id == user_id,
            PROJECT_FILES.c.project_id == project_id,
            PROJECT_FILES.c.file_id == file_id,
        )
        async with self._db.statement() as conn:
            return bool((await conn.execute(stmt)).rowcount)

    async def delete_schedules(self, user_id: str, project_id: str) -> None:
        """Delete the project's schedules, so none starts a run in it while it goes."""
        async with self._db.begin() as conn:
            await delete_project_schedules(conn, user_id, project_id)

    async def delete(self, user_id: str, project_id: str) -> bool:
        """Delete the project, its attachments, its memory items, its schedules (one made
        since `delete_schedules`) and its conversations' marks (the conversations themselves
        are deleted before, one by one); False when not found."""
        async with self._db.begin() as conn:
            await conn.execute(
                delete(PROJECT_FILES).where(
                    PROJECT_FILES.c.user_id == user_id, PROJECT_FILES.c.project_id == project_id
                )
            )
            await delete_project_memory(conn, user_id, project_id)
            await delete_project_schedules(conn, user_id, project_id)
            await conn.execute(
                delete(TITLES).where(TITLES.c.user_id == user_id, TITLES.c.project_id == project_id)
            )
            gone = await conn.execute(
                delete(PROJECTS).where(
                    PROJECTS.c.user_id == user_id, PROJECTS.c.project_id == project_id
                )
            )
            return bool(gone.rowcount)

    async def for_turn(
        self, user_id: str, conversation_id: str, project_id: str | None, memory: bool = False
    ) -> TurnProject:
        """The conversation's mark, whether it has turns, and the project (`project_id`, else
        the conversation's) with its files: one statement, a row per file. With `memory`,
        the user's memory rides in the same statement (`UNION ALL`, each part's columns NULL
        in the other's rows): a turn's start reads once what it needs before anything is
        written."""
        prepared = self._for_turn[(project_id is not None, memory)]
        params = {"user_id": user_id, "conversation_id": conversation_id, "project_id": project_id}
        rows = await self._db.run(prepared, params)
        projects = [row for row in rows if not memory or row["memory_enabled"] is None]
        first = projects[0]
        project = None
        if first["project_id"] is not None:
            project = StoredProject.model_construct(**{c.name: first[c.name] for c in PROJECTS.c})
        return TurnProject(
            project,
            [row["file_id"] for row in projects if row["file_id"] is not None],
            first["placed"],
            bool(first["asked"]),
            turn_memory([row for row in rows if row["memory_enabled"] is not None])
            if memory
            else None,
        )


_USER = bindparam("user_id", type_=String)
_CONVERSATION = bindparam("conversation_id", type_=String)


def _for_turn(named: bool, memory: bool) -> Select[Any] | CompoundSelect[Any]:
    """`for_turn`'s statement, for a project named or the conversation's, with or without the
    memory. Built and compiled once: built each turn, its construction and compilation were
    a fifth of the service's CPU at saturation (py-spy)."""
    placed = (
        select(TITLES.c.project_id)
        .where(TITLES.c.user_id == _USER, TITLES.c.conversation_id == _CONVERSATION)
        .scalar_subquery()
    )
    asked = exists().where(TURNS.c.user_id == _USER, TURNS.c.session_id == _CONVERSATION)
    wanted = bindparam("project_id", type_=String) if named else placed
    anchor = select(_USER.label("owner")).subquery("owner")
    columns: list[ColumnElement[Any]] = [
        placed.label("placed"),
        asked.label("asked"),
        *PROJECTS.c,
        PROJECT_FILES.c.file_id,
    ]
    source = anchor.outerjoin(
        PROJECTS, (PROJECTS.c.user_id == anchor.c.owner) & (PROJECTS.c.project_id == wanted)
    ).outerjoin(PROJECT_FILES, PROJECT_FILES.c.project_id == PROJECTS.c.project_id)
    if not memory:
        return select(*columns).select_from(source)
    remembered, remembered_from = turn_memory_part(_USER)
    return union_all(
        select(*columns, *_nulls(remembered)).select_from(source),
        select(*_nulls(columns), *remembered).select_from(remembered_from),
    ).order_by(*TURN_MEMORY_ORDER)


def _nulls(columns: list[ColumnElement[Any]]) -> list[ColumnElement[Any]]:
    """NULLs of each column's type and name: one part's columns in another part's rows."""
    return [cast(null(), c.type).label(c.key) for c in columns]
