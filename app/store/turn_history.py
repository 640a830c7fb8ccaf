"""The turn store's reads of the history: conversations listed, a conversation's turns.

The history list groups turns into conversations in SQL (one grouped
subquery joined back to each conversation's first row), so a page costs
the same however long the history is. A conversation whose first question
was edited is named by the active path's first question (one more
statement, for those on the page only: store/active_paths.py).
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, bindparam, case, func, select

from app.store.active_paths import active_first_questions
from app.store.base import ConversationSummary
from app.store.models import AI_CONVERSATION_TITLE as TITLES
from app.store.models import AI_SESSION as TURNS
from app.store.models import AI_SHARE as SHARES
from app.store.models import StoredTurn
from app.store.records import TurnStatus
from app.store.titles import title_of
from app.store.turn_rows import _ACTIVE_LEAF, TurnTableAccess, _path, _turn

# Built once, as the turn writes' own (turns.py): a statement skips SQLAlchemy's
# construction and cache-key work.
_ACTIVE_PATH = _path(_ACTIVE_LEAF)
_PARENT_OF = select(TURNS.c.parent_id).where(TURNS.c.id == bindparam("before_id")).scalar_subquery()
_PATH_BEFORE = _path(_PARENT_OF)


class TurnHistory(TurnTableAccess):
    """What the history shows: conversations, and their turns."""

    async def latest_status(self, user_id: str, conversation_id: str) -> TurnStatus | None:
        """How the conversation's newest turn is stored (`running` while it runs); None if none."""
        stmt = (
            select(TURNS.c.status)
            .where(TURNS.c.user_id == user_id, TURNS.c.session_id == conversation_id)
            .order_by(TURNS.c.id.desc())
            .limit(1)
        )
        async with self._db.statement() as conn:
            status: TurnStatus | None = (await conn.execute(stmt)).scalar_one_or_none()
        return status

    async def recent_turns(
        self, user_id: str, conversation_id: str, limit: int, before_id: int | None = None
    ) -> list[StoredTurn]:
        params = {"user_id": user_id, "session_id": conversation_id, "limit": max(limit, 0)}
        stmt = _ACTIVE_PATH
        if before_id is not None:
            params["before_id"] = before_id
            stmt = _PATH_BEFORE
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt, params)).mappings().all()
        return [_turn(row) for row in reversed(rows)]

    async def list_conversations(
        self, user_id: str, page: int, size: int, project_id: str | None = None
    ) -> tuple[list[ConversationSummary], int]:
        if page < 1 or size < 1:
            raise ValueError("page and size start at 1")
        mine: list[ColumnElement[bool]] = [TURNS.c.user_id == user_id]
        if project_id is not None:
            mine.append(
                TURNS.c.session_id.in_(
                    select(TITLES.c.conversation_id).where(
                        TITLES.c.user_id == user_id, TITLES.c.project_id == project_id
                    )
                )
            )
        conversations = (
            select(
                func.min(TURNS.c.id).label("first_id"),
                func.max(TURNS.c.id).label("last_id"),
                func.max(TURNS.c.update_time).label("last_time"),
                # More than one first question: it was edited, the title follows the active one.
                func.count(case((TURNS.c.parent_id.is_(None), 1))).label("roots"),
                # Counted over all groups before the outer LIMIT: the total in the same trip.
                func.count().over().label("total"),
            )
            .where(*mine)
            .group_by(TURNS.c.session_id)
            .subquery()
        )
        first = TURNS.alias("first_turn")
        pinned = TITLES.c.pinned_at.is_not(None).label("pinned")
        stmt = (
            select(
                first.c.id,
                first.c.session_id,
                first.c.question,
                first.c.agent_type,
                first.c.fileid,
                first.c.create_time,
                conversations.c.last_time,
                conversations.c.roots,
                conversations.c.total,
                TITLES.c.title,
                TITLES.c.project_id,
                pinned,
                SHARES.c.token.is_not(None).label("shared"),
            )
            .join_from(conversations, first, first.c.id == conversations.c.first_id)
            .outerjoin(
                TITLES,
                (TITLES.c.user_id == user_id) & (TITLES.c.conversation_id == first.c.session_id),
            )
            .outerjoin(
                SHARES,
                (SHARES.c.user_id == user_id) & (SHARES.c.conversation_id == first.c.session_id),
            )
            # Pinned first; ties in time (same instant) fall back to the newest row, so pages
            # never shuffle.
            .order_by(
                pinned.desc(), conversations.c.last_time.desc(), conversations.c.last_id.desc()
            )
            .limit(size)
            .offset((page - 1) * size)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
            if rows:
                total = int(rows[0]["total"])
            else:
                # A page past the end has no row to carry the total.
                count = select(func.count(func.distinct(TURNS.c.session_id))).where(*mine)
                total = int((await conn.execute(count)).scalar_one())
            edited = [row["id"] for row in rows if row["roots"] > 1]
            firsts = await active_first_questions(conn, user_id, edited)
        records = [
            ConversationSummary(
                conversation_id=row["session_id"],
                title=title_of(row["title"], question),
                question=question,
                agent_type=row["agent_type"],
                fileid=row["fileid"],
                create_time=row["create_time"],
                update_time=row["last_time"],
                pinned=bool(row["pinned"]),
                shared=bool(row["shared"]),
                project_id=row["project_id"],
            )
            for row in rows
            for question in [firsts.get(row["session_id"], row["question"])]
        ]
        return records, total

    async def get_conversation(self, user_id: str, conversation_id: str) -> list[StoredTurn]:
        stmt = (
            select(TURNS)
            .where(TURNS.c.user_id == user_id, TURNS.c.session_id == conversation_id)
            .order_by(TURNS.c.id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_turn(row) for row in rows]

    async def get_turn(self, user_id: str, conversation_id: str, turn_id: int) -> StoredTurn | None:
        stmt = select(TURNS).where(
            TURNS.c.id == turn_id, TURNS.c.user_id == user_id, TURNS.c.session_id == conversation_id
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _turn(row)
