"""`SessionStore` on SQL (SQLite or PostgreSQL): the turns of every conversation.

Each method is a single SQLAlchemy Core statement where it can be, run
through `Database.statement()` (no ORM, and no BEGIN/COMMIT round trips on
PostgreSQL). A turn's own statements are `Prepared` once per database and
run through `Database.run()`: on PostgreSQL the question's INSERT and the
memory read are one statement (a CTE: the INSERT cannot see its own row,
so the SELECT beside it returns exactly the earlier turns), and the
answer is one UPDATE. Every query filters on the user.

The history list groups turns into conversations in SQL (one grouped
subquery joined back to each conversation's first row), so a page costs
the same however long the history is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Select,
    bindparam,
    delete,
    exists,
    func,
    insert,
    select,
    true,
    update,
)

from app.store.base import ConversationSummary, DeletedConversation
from app.store.db import Database
from app.store.file_store import delete_file_rows
from app.store.models import AI_CONVERSATION_TITLE as TT
from app.store.models import AI_FILE as F
from app.store.models import AI_SESSION as T
from app.store.models import StoredTurn, TurnOutcome
from app.store.records import ToolCall, TurnStatus
from app.store.titles import delete_title, title_of

_INSERTED = [c.name for c in T.c if c.name != "id"]
"""Every column a question's INSERT writes: all of them, so a new one needs no edit here."""
_OUTCOME = list(TurnOutcome.model_fields)
"""Every column the answer's UPDATE writes, by the family's rule (models.py)."""

_INSERT_QUESTION = insert(T).returning(T.c.id)
_FINISH_TURN = update(T).where(T.c.id == bindparam("turn_id"))
_SAVE_PARTIAL = update(T).where(T.c.id == bindparam("turn_id"), T.c.status == "running")
_FINISH_UNFINISHED = update(T).where(
    T.c.id == bindparam("turn_id"), T.c.status.in_(("running", "interrupted"))
)
# Memory is read on every turn: built once, a statement skips SQLAlchemy's construction
# and cache-key work (about a fifth of the read's CPU, measured with cProfile).
_RECENT_TURNS = (
    select(T)
    .where(T.c.user_id == bindparam("user_id"), T.c.session_id == bindparam("session_id"))
    .order_by(T.c.id.desc())
    .limit(bindparam("limit"))
)
_RECENT_TURNS_BEFORE = _RECENT_TURNS.where(T.c.id < bindparam("before_id"))


def _question_with_memory() -> Select[Any]:
    """`INSERT … RETURNING id` beside the conversation's latest rows, in one statement.

    The LEFT JOIN keeps the new id when there are no earlier turns.
    """
    values = {name: bindparam(name, type_=T.c[name].type) for name in _INSERTED}
    question = insert(T).values(values).returning(T.c.id).cte("question")
    earlier = _RECENT_TURNS.lateral("earlier")
    return select(question.c.id.label("new_id"), earlier).select_from(
        question.outerjoin(earlier, true())
    )


class SqlSessionStore:
    """`instance_id` names the running instance in each question's row: when that instance
    dies, another finds its running turns by it (`interrupt_instance`)."""

    def __init__(self, db: Database, instance_id: str | None = None) -> None:
        self._db = db
        self._instance_id = instance_id
        self._finish_turn = db.prepare(_FINISH_TURN, [*_OUTCOME, "update_time"])
        self._insert_question = db.prepare(_INSERT_QUESTION, _INSERTED)
        self._recent_turns = db.prepare(_RECENT_TURNS_BEFORE)
        self._question_with_memory = (
            db.prepare(_question_with_memory()) if db.dialect.name == "postgresql" else None
        )

    async def add_question(self, turn: StoredTurn) -> int:
        turn_id, _ = await self.begin_turn(turn, memory_turns=0)
        return turn_id

    async def begin_turn(self, turn: StoredTurn, memory_turns: int) -> tuple[int, list[StoredTurn]]:
        """Store the question (`running`) and read the `memory_turns` turns before it.

        One statement on PostgreSQL; elsewhere two, the INSERT committed first.
        """
        now = _now()
        params = {name: getattr(turn, name) for name in _INSERTED}
        params.update(
            status="running", create_time=now, update_time=now, instance_id=self._instance_id
        )
        if self._question_with_memory is not None:
            params["limit"] = max(memory_turns, 0)
            rows = await self._db.run(self._question_with_memory, params)
            turn_id = int(rows[0]["new_id"])
            return turn_id, [_turn(row) for row in reversed(rows) if row["id"] is not None]
        [row] = await self._db.run(self._insert_question, params)
        turn_id = int(row["id"])
        if memory_turns <= 0:
            return turn_id, []
        earlier = await self.recent_turns(
            turn.user_id, turn.session_id, memory_turns, before_id=turn_id
        )
        return turn_id, earlier

    async def finish_turn(self, turn_id: int, outcome: TurnOutcome) -> None:
        """Write the run's end in one UPDATE.

        A turn deleted meanwhile (its conversation was deleted mid-run) is
        simply not there to update, which is what the user asked for.
        """
        params = {name: getattr(outcome, name) for name in _OUTCOME}
        params.update(turn_id=turn_id, update_time=_now())
        await self._db.run(self._finish_turn, params)

    async def finish_unfinished_turn(self, turn_id: int, outcome: TurnOutcome) -> bool:
        """`finish_turn` for a turn its own run could not store; False if nothing was written.

        Only while the row is unfinished (`running`, or `interrupted` by the orphan
        sweep, which kept only the partial answer): a turn finished since, or deleted,
        is left as it is. Rare, so on SQLAlchemy's path rather than a prepared one.
        """
        params = {name: getattr(outcome, name) for name in _OUTCOME}
        params.update(turn_id=turn_id, update_time=_now())
        async with self._db.statement() as conn:
            return (await conn.execute(_FINISH_UNFINISHED, params)).rowcount > 0

    async def save_partial(
        self,
        turn_id: int,
        answer: str,
        thinking: str,
        tools: list[ToolCall] | None = None,
    ) -> None:
        """Keep the answer so far, so a crash loses only what came after it.

        Guarded on `running` so a late periodic save never overwrites a turn
        that has already been finished or marked interrupted. The UPDATE sets
        exactly the columns given, so `tools=None` leaves them as they are.
        """
        params: dict[str, Any] = {
            "turn_id": turn_id,
            "answer": answer,
            "thinking": thinking,
            "update_time": _now(),
        }
        if tools is not None:
            params["tools"] = tools
        async with self._db.statement() as conn:
            await conn.execute(_SAVE_PARTIAL, params)

    async def mark_interrupted(
        self,
        conversation_id: str | None = None,
        user_id: str | None = None,
        older_than: datetime | None = None,
        *,
        unowned: bool = False,
    ) -> int:
        stmt = (
            update(T)
            .where(T.c.status == "running")
            .values(status="interrupted", update_time=_now())
        )
        if unowned:
            stmt = stmt.where(T.c.instance_id.is_(None))
        if conversation_id is not None:
            stmt = stmt.where(T.c.session_id == conversation_id)
        if user_id is not None:
            stmt = stmt.where(T.c.user_id == user_id)
        if older_than is not None:
            stmt = stmt.where(T.c.update_time < older_than)
        async with self._db.statement() as conn:
            return (await conn.execute(stmt)).rowcount

    async def running_instances(self) -> set[str]:
        """The instances with turns stored `running` (read from the running rows' own index)."""
        stmt = select(T.c.instance_id).where(T.c.status == "running").distinct()
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).scalars().all()
        return {row for row in rows if row is not None}

    async def interrupt_instance(self, instance_id: str) -> list[tuple[str, str]]:
        """Mark the instance's running turns `interrupted`; their (user, conversation) pairs."""
        stmt = (
            update(T)
            .where(T.c.status == "running", T.c.instance_id == instance_id)
            .values(status="interrupted", update_time=_now())
            .returning(T.c.user_id, T.c.session_id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).all()
        return sorted({(row.user_id, row.session_id) for row in rows})

    async def latest_status(self, user_id: str, conversation_id: str) -> TurnStatus | None:
        """How the conversation's newest turn is stored (`running` while it runs); None if none."""
        stmt = (
            select(T.c.status)
            .where(T.c.user_id == user_id, T.c.session_id == conversation_id)
            .order_by(T.c.id.desc())
            .limit(1)
        )
        async with self._db.statement() as conn:
            status: TurnStatus | None = (await conn.execute(stmt)).scalar_one_or_none()
        return status

    async def recent_turns(
        self, user_id: str, conversation_id: str, limit: int, before_id: int | None = None
    ) -> list[StoredTurn]:
        params = {"user_id": user_id, "session_id": conversation_id, "limit": max(limit, 0)}
        if before_id is not None:
            # A turn's memory, read on every turn: the prepared statement, on the driver.
            params["before_id"] = before_id
            rows: Sequence[Mapping[Any, Any]] = await self._db.run(self._recent_turns, params)
        else:
            async with self._db.statement() as conn:
                rows = (await conn.execute(_RECENT_TURNS, params)).mappings().all()
        return [_turn(row) for row in reversed(rows)]

    async def list_conversations(
        self, user_id: str, page: int, size: int
    ) -> tuple[list[ConversationSummary], int]:
        if page < 1 or size < 1:
            raise ValueError("page and size start at 1")
        conversations = (
            select(
                func.min(T.c.id).label("first_id"),
                func.max(T.c.id).label("last_id"),
                func.max(T.c.update_time).label("last_time"),
                # Counted over all groups before the outer LIMIT: the total in the same trip.
                func.count().over().label("total"),
            )
            .where(T.c.user_id == user_id)
            .group_by(T.c.session_id)
            .subquery()
        )
        first = T.alias("first_turn")
        stmt = (
            select(
                first.c.session_id,
                first.c.question,
                first.c.agent_type,
                first.c.fileid,
                first.c.create_time,
                conversations.c.last_time,
                conversations.c.total,
                TT.c.title,
            )
            .join_from(conversations, first, first.c.id == conversations.c.first_id)
            .outerjoin(TT, (TT.c.user_id == user_id) & (TT.c.conversation_id == first.c.session_id))
            # Ties in time (same instant) fall back to the newest row, so pages never shuffle.
            .order_by(conversations.c.last_time.desc(), conversations.c.last_id.desc())
            .limit(size)
            .offset((page - 1) * size)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
            if rows:
                total = int(rows[0]["total"])
            else:
                # A page past the end has no row to carry the total.
                count = select(func.count(func.distinct(T.c.session_id))).where(
                    T.c.user_id == user_id
                )
                total = int((await conn.execute(count)).scalar_one())
        records = [
            ConversationSummary(
                conversation_id=row["session_id"],
                title=title_of(row["title"], row["question"]),
                question=row["question"],
                agent_type=row["agent_type"],
                fileid=row["fileid"],
                create_time=row["create_time"],
                update_time=row["last_time"],
            )
            for row in rows
        ]
        return records, total

    async def get_conversation(self, user_id: str, conversation_id: str) -> list[StoredTurn]:
        stmt = (
            select(T)
            .where(T.c.user_id == user_id, T.c.session_id == conversation_id)
            .order_by(T.c.id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_turn(row) for row in rows]

    async def delete_conversation(self, user_id: str, conversation_id: str) -> DeletedConversation:
        """Delete the turns and the files no other conversation used, all at once.

        A file is used by a conversation when one of its turns names it; a
        file never asked about is the user's to delete, not the conversation's.
        """
        mine = T.c.user_id == user_id, T.c.session_id == conversation_id
        used_here = select(T.c.fileid).where(*mine, T.c.fileid.is_not(None))
        used_elsewhere = exists().where(T.c.fileid == F.c.id, T.c.session_id != conversation_id)
        uploaded_for_it = F.c.id.in_(used_here) & ~used_elsewhere
        made_by_it = (F.c.source == "generated") & (F.c.session_id == conversation_id)
        only_here = select(F.c.id, F.c.blob_key).where(
            F.c.user_id == user_id, uploaded_for_it | made_by_it
        )
        async with self._db.begin() as conn:
            files = (await conn.execute(only_here)).all()
            await delete_file_rows(conn, [row.id for row in files])
            await delete_title(conn, user_id, conversation_id)
            turns = (await conn.execute(delete(T).where(*mine))).rowcount
        return DeletedConversation(turns, [row.blob_key for row in files])

    async def delete_last_turn(
        self, user_id: str, conversation_id: str, statuses: tuple[TurnStatus, ...]
    ) -> int | None:
        newest = (
            select(T.c.id)
            .where(T.c.user_id == user_id, T.c.session_id == conversation_id)
            .order_by(T.c.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        stmt = delete(T).where(T.c.id == newest, T.c.status.in_(statuses)).returning(T.c.id)
        async with self._db.statement() as conn:
            return (await conn.execute(stmt)).scalar_one_or_none()

    async def paused_turns(self, user_id: str, limit: int) -> list[StoredTurn]:
        newer = T.alias("newer")
        stmt = (
            select(T)
            .where(
                T.c.user_id == user_id,
                T.c.status == "paused",
                ~exists().where(
                    newer.c.user_id == user_id,
                    newer.c.session_id == T.c.session_id,
                    newer.c.id > T.c.id,
                ),
            )
            .order_by(T.c.id.desc())
            .limit(limit)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_turn(row) for row in rows]

    async def ping(self) -> None:
        await self._db.ping()


def _now() -> datetime:
    return datetime.now(UTC)


def _turn(row: Mapping[Any, Any]) -> StoredTurn:
    """The row as its table model; its columns already gave every value its type."""
    return StoredTurn.model_construct(**row)
