"""`SessionStore` on SQL (SQLite or PostgreSQL): the turns of every conversation.

Each method is a single SQLAlchemy Core statement where it can be, run
through `Database.statement()` (no ORM, and no BEGIN/COMMIT round trips on
PostgreSQL). A turn's own statements are `Prepared` once per database and
run through `Database.run()`: on PostgreSQL the question's INSERT and the
memory read are one statement (a CTE: the INSERT cannot see its own row,
so the SELECT beside it returns exactly the earlier turns), and the
answer is one UPDATE. Every query filters on the user.

A conversation is a tree (`parent_id`; store/tree.py): the INSERT works out
the new turn's parent itself (the active leaf unless one is given), and the
memory is the walk up from that parent, so no other branch reaches the model.

The history list groups turns into conversations in SQL (one grouped
subquery joined back to each conversation's first row), so a page costs
the same however long the history is. A conversation whose first question
was edited is named by the active path's first question (one more
statement, for those on the page only: store/active_paths.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Delete,
    Select,
    and_,
    bindparam,
    case,
    delete,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.active_paths import active_first_questions, active_leaf
from app.store.base import ConversationSummary, DeletedConversation, DeletedTurns, GoneTurn
from app.store.db import Database
from app.store.file_store import delete_file_rows
from app.store.models import AI_ACTIVE_PATH as A
from app.store.models import AI_CONVERSATION_TITLE as TT
from app.store.models import AI_FILE as F
from app.store.models import AI_SESSION as T
from app.store.models import AI_SHARE as S
from app.store.models import StoredTurn, TurnOutcome
from app.store.project_models import PROJECT_FILE as PF
from app.store.push_configs import delete_push_configs, delete_turns_push_configs
from app.store.records import ToolCall, TurnStatus
from app.store.shares import delete_share
from app.store.titles import delete_title, title_of
from app.store.tree import ChosenLeaf, ConversationTree

_INSERTED = [c.name for c in T.c if c.name not in ("id", "parent_id")]
"""Every column a question's INSERT writes as given: all but the parent, which it works out."""
_OUTCOME = list(TurnOutcome.model_fields)
"""Every column the answer's UPDATE writes, by the family's rule (models.py)."""

_MINE = (T.c.user_id == bindparam("user_id"), T.c.session_id == bindparam("session_id"))
_NEWEST = select(func.max(T.c.id)).where(*_MINE).scalar_subquery()
_ACTIVE_LEAF = func.coalesce(
    select(A.c.leaf_id)
    .where(
        A.c.user_id == bindparam("user_id"),
        A.c.conversation_id == bindparam("session_id"),
        A.c.newest_id >= _NEWEST,
    )
    .scalar_subquery(),
    _NEWEST,
)
"""The active path's leaf: the chosen one while no newer turn came, else the newest turn."""
_GIVEN_PARENT = bindparam("parent_id", type_=T.c.parent_id.type)
_PARENT = func.nullif(func.coalesce(_GIVEN_PARENT, _ACTIVE_LEAF), 0)
"""A new turn's parent: `parent_id`, 0 for none, or (None) the active leaf, worked out in the
question's own INSERT so following the active path costs no statement."""
_INSERT_QUESTION = (
    insert(T)
    .values(
        {
            **{name: bindparam(name, type_=T.c[name].type) for name in _INSERTED},
            "parent_id": _PARENT,
        }
    )
    .returning(T.c.id, T.c.parent_id)
)
_FINISH_TURN = update(T).where(T.c.id == bindparam("turn_id"))
_SAVE_PARTIAL = update(T).where(T.c.id == bindparam("turn_id"), T.c.status == "running")
_FINISH_UNFINISHED = update(T).where(
    T.c.id == bindparam("turn_id"), T.c.status.in_(("running", "interrupted"))
)


def _path_ids(start: ColumnElement[Any]) -> Select[Any]:
    """The ids of `start` and its ancestors, `limit` of them at most: a walk up the parents.

    The recursive CTE is nested in the statement that uses it, so that statement
    stays a plain SELECT; each step is one primary-key lookup.
    """
    anchor = select(T.c.id, T.c.parent_id, literal(1).label("depth")).where(
        T.c.id == start, *_MINE, bindparam("limit") > 0
    )
    path = anchor.cte("path", recursive=True, nesting=True)
    up = T.alias("up")
    path = path.union_all(
        select(up.c.id, up.c.parent_id, path.c.depth + 1).where(
            up.c.id == path.c.parent_id,
            up.c.user_id == bindparam("user_id"),
            up.c.session_id == bindparam("session_id"),
            path.c.depth < bindparam("limit"),
        )
    )
    return select(path.c.id)


def _path(start: ColumnElement[Any]) -> Select[Any]:
    """`start` and its ancestors (the memory of a turn that follows `start`), newest first."""
    return select(T).where(T.c.id.in_(_path_ids(start))).order_by(T.c.id.desc())


# Memory is read on every turn: built once, a statement skips SQLAlchemy's construction
# and cache-key work (about a fifth of the read's CPU, measured with cProfile).
_PATH_FROM = _path(bindparam("start_id", type_=T.c.id.type))
_ACTIVE_PATH = _path(_ACTIVE_LEAF)
_PARENT_OF = select(T.c.parent_id).where(T.c.id == bindparam("before_id")).scalar_subquery()
_PATH_BEFORE = _path(_PARENT_OF)


def _question_with_memory() -> Select[Any]:
    """`INSERT … RETURNING id` beside the path to its parent, in one statement.

    The LEFT JOIN keeps the new id when there are no earlier turns.
    """
    asked = _INSERT_QUESTION.cte("question")
    earlier = _path(asked.c.parent_id).subquery("earlier")
    return (
        select(asked.c.id.label("new_id"), earlier)
        .select_from(asked.outerjoin(earlier, true()))
        .order_by(earlier.c.id.desc())
    )


class SqlSessionStore:
    """`instance_id` names the running instance in each question's row: when that instance
    dies, another finds its running turns by it (`running_turns`) and takes them over
    (`take_over`) or marks them `interrupted` (`interrupt_turns`).

    A turn is written by the instance its row names: once another took it over, this one's
    late writes (an instance that was only slow, not dead) change nothing.
    """

    def __init__(self, db: Database, instance_id: str | None = None) -> None:
        self._db = db
        self._instance_id = instance_id
        owned = [] if instance_id is None else [_owned_by(instance_id)]
        self._finish_turn = db.prepare(_FINISH_TURN.where(*owned), [*_OUTCOME, "update_time"])
        self._save_partial = _SAVE_PARTIAL.where(*owned)
        self._insert_question = db.prepare(_INSERT_QUESTION)
        self._path_from = db.prepare(_PATH_FROM)
        self._question_with_memory = (
            db.prepare(_question_with_memory()) if db.dialect.name == "postgresql" else None
        )

    async def add_question(self, turn: StoredTurn, parent_id: int | None = None) -> int:
        turn_id, _ = await self.begin_turn(turn, memory_turns=0, parent_id=parent_id)
        return turn_id

    async def begin_turn(
        self, turn: StoredTurn, memory_turns: int, parent_id: int | None = None
    ) -> tuple[int, list[StoredTurn]]:
        """Store the question (`running`) and read the `memory_turns` turns of the path above it.

        One statement on PostgreSQL; elsewhere two, the INSERT committed first.
        """
        now = _now()
        params = {name: getattr(turn, name) for name in _INSERTED}
        params.update(
            status="running",
            create_time=now,
            update_time=now,
            instance_id=self._instance_id,
            parent_id=parent_id,
            limit=max(memory_turns, 0),
        )
        if self._question_with_memory is not None:
            rows = await self._db.run(self._question_with_memory, params)
            turn_id = int(rows[0]["new_id"])
            return turn_id, [_turn(row) for row in reversed(rows) if row["id"] is not None]
        [row] = await self._db.run(self._insert_question, params)
        turn_id, parent = int(row["id"]), row["parent_id"]
        if memory_turns <= 0 or parent is None:
            return turn_id, []
        params["start_id"] = parent
        rows = await self._db.run(self._path_from, params)
        return turn_id, [_turn(row) for row in reversed(rows)]

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
            await conn.execute(self._save_partial, params)

    async def mark_interrupted(
        self, older_than: datetime | None = None, *, unowned: bool = False
    ) -> int:
        stmt = (
            update(T)
            .where(T.c.status == "running")
            .values(status="interrupted", update_time=_now())
        )
        if unowned:
            stmt = stmt.where(T.c.instance_id.is_(None))
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

    async def interrupt_turns(self, turns: Sequence[StoredTurn]) -> list[tuple[str, str]]:
        """Mark `turns` `interrupted` where each is still `running` on the instance it was
        read with; the (user, conversation) pairs of those marked.

        One conditional UPDATE, as `take_over` is: a turn another instance took over since
        it was read (its row names that instance now) or that ended is left as it is, so a
        turn is carried on or interrupted, never both.
        """
        read = [
            and_(
                T.c.id == turn.id,
                T.c.instance_id.is_(None)
                if turn.instance_id is None
                else T.c.instance_id == turn.instance_id,
            )
            for turn in turns
            if turn.id is not None
        ]
        if not read:
            return []
        stmt = (
            update(T)
            .where(T.c.status == "running", or_(*read))
            .values(status="interrupted", update_time=_now())
            .returning(T.c.user_id, T.c.session_id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).all()
        return sorted({(row.user_id, row.session_id) for row in rows})

    async def running_turns(self, instance_id: str) -> list[StoredTurn]:
        """The instance's turns stored `running`, oldest first."""
        stmt = (
            select(T)
            .where(T.c.status == "running", T.c.instance_id == instance_id)
            .order_by(T.c.id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_turn(row) for row in rows]

    async def take_over(self, turn_id: int, dead: str, takeovers: int) -> StoredTurn | None:
        """Make the `dead` instance's running turn this instance's, as its move `takeovers + 1`.

        One conditional UPDATE: of instances racing for the same move, one gets the row
        back, the others None (as does a turn that ended or moved meanwhile).
        """
        stmt = (
            update(T)
            .where(
                T.c.id == turn_id,
                T.c.status == "running",
                T.c.instance_id == dead,
                T.c.takeovers == takeovers,
            )
            .values(instance_id=self._instance_id, takeovers=takeovers + 1, update_time=_now())
            .returning(*T.c)
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _turn(row)

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
        mine: list[ColumnElement[bool]] = [T.c.user_id == user_id]
        if project_id is not None:
            mine.append(
                T.c.session_id.in_(
                    select(TT.c.conversation_id).where(
                        TT.c.user_id == user_id, TT.c.project_id == project_id
                    )
                )
            )
        conversations = (
            select(
                func.min(T.c.id).label("first_id"),
                func.max(T.c.id).label("last_id"),
                func.max(T.c.update_time).label("last_time"),
                # More than one first question: it was edited, the title follows the active one.
                func.count(case((T.c.parent_id.is_(None), 1))).label("roots"),
                # Counted over all groups before the outer LIMIT: the total in the same trip.
                func.count().over().label("total"),
            )
            .where(*mine)
            .group_by(T.c.session_id)
            .subquery()
        )
        first = T.alias("first_turn")
        pinned = TT.c.pinned_at.is_not(None).label("pinned")
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
                TT.c.title,
                TT.c.project_id,
                pinned,
                S.c.token.is_not(None).label("shared"),
            )
            .join_from(conversations, first, first.c.id == conversations.c.first_id)
            .outerjoin(TT, (TT.c.user_id == user_id) & (TT.c.conversation_id == first.c.session_id))
            .outerjoin(S, (S.c.user_id == user_id) & (S.c.conversation_id == first.c.session_id))
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
                count = select(func.count(func.distinct(T.c.session_id))).where(*mine)
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
            select(T)
            .where(T.c.user_id == user_id, T.c.session_id == conversation_id)
            .order_by(T.c.id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_turn(row) for row in rows]

    async def get_tree(self, user_id: str, conversation_id: str) -> ConversationTree:
        async with self._db.statement() as conn:
            return await _read_tree(conn, user_id, conversation_id)

    async def get_turn(self, user_id: str, conversation_id: str, turn_id: int) -> StoredTurn | None:
        stmt = select(T).where(
            T.c.id == turn_id, T.c.user_id == user_id, T.c.session_id == conversation_id
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _turn(row)

    async def choose_path(
        self, user_id: str, conversation_id: str, turn_id: int
    ) -> ConversationTree | None:
        async with self._db.begin() as conn:
            tree = await _read_tree(conn, user_id, conversation_id)
            if turn_id not in tree:
                return None
            tree.chosen = await _choose(
                conn, user_id, conversation_id, tree.newest_leaf(turn_id), tree.newest_id
            )
        return tree

    async def delete_turns(self, user_id: str, conversation_id: str, turn_id: int) -> DeletedTurns:
        """Rare, so read whole: the conversation's tree, then the deletes it decides."""
        async with self._db.begin() as conn:
            tree = await _read_tree(conn, user_id, conversation_id)
            if turn_id not in tree:
                return DeletedTurns(0)
            ids = tree.below(turn_id)
            gone = set(ids)
            if any(t.status == "running" for t in tree.turns if t.id in gone):
                return DeletedTurns(0, running=True)
            leaf = tree.leaf_id
            if leaf in gone:
                leaf = _after_deleting(tree, turn_id)
            made = [f.file_id for t in tree.turns if t.id in gone for f in t.files]
            blob_keys = await _delete_files(
                conn, user_id, T.c.id.in_(ids), F.c.id.in_(made) & (F.c.source == "generated")
            )
            turns = (await conn.execute(delete(T).where(T.c.id.in_(ids)))).rowcount
            await delete_turns_push_configs(conn, user_id, conversation_id, ids)
            remaining = [t.id for t in tree.turns if t.id is not None and t.id not in gone]
            if leaf is None or not remaining:
                await conn.execute(_forget_path(user_id, conversation_id))
            else:
                await _choose(conn, user_id, conversation_id, leaf, max(remaining))
        gone_turns = [
            GoneTurn(t.id, t.create_time, t.agent_type) for t in tree.turns if t.id in gone
        ]
        return DeletedTurns(turns, blob_keys=blob_keys, gone=gone_turns)

    async def delete_conversation(self, user_id: str, conversation_id: str) -> DeletedConversation:
        """Delete the turns and the files no other conversation used, all at once.

        A file is used by a conversation when one of its turns names it; a
        file never asked about is the user's to delete, not the conversation's.
        """
        mine = (T.c.user_id == user_id) & (T.c.session_id == conversation_id)
        made_by_it = (F.c.source == "generated") & (F.c.session_id == conversation_id)
        async with self._db.begin() as conn:
            blob_keys = await _delete_files(conn, user_id, mine, made_by_it)
            rows = (
                await conn.execute(
                    delete(T).where(mine).returning(T.c.id, T.c.create_time, T.c.agent_type)
                )
            ).all()
            await conn.execute(_forget_path(user_id, conversation_id))
            await delete_title(conn, user_id, conversation_id)
            await delete_share(conn, user_id, conversation_id)
            await delete_push_configs(conn, user_id, conversation_id)
        gone = [
            GoneTurn(row.id, row.create_time, row.agent_type)
            for row in sorted(rows, key=lambda r: r.id)
        ]
        return DeletedConversation(len(gone), blob_keys, gone)

    async def delete_last_turn(
        self, user_id: str, conversation_id: str, statuses: tuple[TurnStatus, ...]
    ) -> GoneTurn | None:
        newest = (
            select(T.c.id)
            .where(T.c.user_id == user_id, T.c.session_id == conversation_id)
            .order_by(T.c.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        stmt = (
            delete(T)
            .where(T.c.id == newest, T.c.status.in_(statuses))
            .returning(T.c.id, T.c.create_time, T.c.agent_type)
        )
        async with self._db.begin() as conn:
            row = (await conn.execute(stmt)).one_or_none()
            if row is None:
                return None
            await delete_turns_push_configs(conn, user_id, conversation_id, [row.id])
        return GoneTurn(row.id, row.create_time, row.agent_type)

    async def paused_turns(self, user_id: str, limit: int) -> list[StoredTurn]:
        """A paused turn is listed while it is the active leaf (what a plain next message
        answers); one on a branch switched away from waits there, unlisted, until switched back."""
        stmt = (
            select(T)
            .where(
                T.c.user_id == user_id,
                T.c.status == "paused",
                T.c.id == active_leaf(user_id, T.c.session_id),
            )
            .order_by(T.c.id.desc())
            .limit(limit)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_turn(row) for row in rows]

    async def decide(
        self, user_id: str, conversation_id: str, approval_id: str, agent_type: str | None = None
    ) -> StoredTurn | None:
        mine = [] if agent_type is None else [T.c.agent_type == agent_type]
        stmt = (
            update(T)
            .where(
                T.c.user_id == user_id,
                T.c.session_id == conversation_id,
                T.c.approval_id == approval_id,
                T.c.status == "paused",
                *mine,
            )
            .values(
                status="running",
                approval_id=None,
                instance_id=self._instance_id,
                update_time=_now(),
            )
            .returning(*T.c)
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _turn(row)

    async def ping(self) -> None:
        await self._db.ping()


def _owned_by(instance_id: str) -> ColumnElement[bool]:
    """The row is this instance's to write: its own turn, or one stored before rows named one."""
    return or_(T.c.instance_id.is_(None), T.c.instance_id == instance_id)


def _now() -> datetime:
    return datetime.now(UTC)


async def _read_tree(conn: AsyncConnection, user_id: str, conversation_id: str) -> ConversationTree:
    turns = (T.c.user_id == user_id) & (T.c.session_id == conversation_id)
    rows = (await conn.execute(select(T).where(turns).order_by(T.c.id))).mappings().all()
    chosen = select(A.c.leaf_id, A.c.newest_id).where(
        A.c.user_id == user_id, A.c.conversation_id == conversation_id
    )
    leaf = (await conn.execute(chosen)).one_or_none() if rows else None
    return ConversationTree(
        [_turn(row) for row in rows],
        None if leaf is None else ChosenLeaf(leaf.leaf_id, leaf.newest_id),
    )


def _forget_path(user_id: str, conversation_id: str) -> Delete:
    return delete(A).where(A.c.user_id == user_id, A.c.conversation_id == conversation_id)


async def _choose(
    conn: AsyncConnection, user_id: str, conversation_id: str, leaf_id: int, newest_id: int | None
) -> ChosenLeaf:
    """Record the active leaf, valid until a turn newer than `newest_id` comes."""
    chosen = ChosenLeaf(leaf_id, newest_id or leaf_id)
    await conn.execute(_forget_path(user_id, conversation_id))
    await conn.execute(
        insert(A).values(
            user_id=user_id,
            conversation_id=conversation_id,
            leaf_id=chosen.leaf_id,
            newest_id=chosen.newest_id,
        )
    )
    return chosen


def _after_deleting(tree: ConversationTree, turn_id: int) -> int | None:
    """Where the active path goes when it ran through `turn_id`: the newest remaining
    sibling's newest leaf, or the parent (None: the conversation's first question)."""
    others = [s for s in tree.siblings(turn_id) if s != turn_id]
    if others:
        return tree.newest_leaf(max(others))
    return tree.parent_of(turn_id)


async def _delete_files(
    conn: AsyncConnection,
    user_id: str,
    turns: ColumnElement[bool],
    made: ColumnElement[bool],
) -> list[str]:
    """Delete the user's files only `turns` used (named by one of them and by no other turn,
    and attached to no project), and those `made` selects; the deleted files' blob keys."""
    used_here = select(T.c.fileid).where(turns, T.c.fileid.is_not(None))
    used_elsewhere = exists().where(T.c.fileid == F.c.id, ~turns)
    attached = exists().where(PF.c.file_id == F.c.id)
    only_here = select(F.c.id, F.c.blob_key).where(
        F.c.user_id == user_id, (F.c.id.in_(used_here) & ~used_elsewhere & ~attached) | made
    )
    files = (await conn.execute(only_here)).all()
    await delete_file_rows(conn, [row.id for row in files])
    return [row.blob_key for row in files]


def _turn(row: Mapping[Any, Any]) -> StoredTurn:
    """The row as its table model; its columns already gave every value its type."""
    return StoredTurn.model_construct(**row)
