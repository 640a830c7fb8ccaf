"""`TurnStore` on SQL (SQLite or PostgreSQL): the turns of every conversation.

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

This module holds the turn writes; the store's other jobs are parts it is made
of, a module each (turn_recovery, turn_history, turn_tree, turn_approvals),
sharing turn_rows.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, func, insert, or_, select, true, update

from app.store.db import Database
from app.store.models import AI_SESSION as TURNS
from app.store.models import StoredTurn, TurnOutcome
from app.store.records import ToolCall
from app.store.turn_approvals import TurnApprovals
from app.store.turn_history import TurnHistory
from app.store.turn_recovery import TurnRecovery
from app.store.turn_rows import _ACTIVE_LEAF, _now, _path, _turn
from app.store.turn_tree import TurnTree

_INSERTED = [c.name for c in TURNS.c if c.name not in ("id", "parent_id")]
"""Every column a question's INSERT writes as given: all but the parent, which it works out."""
_OUTCOME = list(TurnOutcome.model_fields)
"""Every column the answer's UPDATE writes, by the family's rule (models.py)."""

_GIVEN_PARENT = bindparam("parent_id", type_=TURNS.c.parent_id.type)
_PARENT = func.nullif(func.coalesce(_GIVEN_PARENT, _ACTIVE_LEAF), 0)
"""A new turn's parent: `parent_id`, 0 for none, or (None) the active leaf, worked out in the
question's own INSERT so following the active path costs no statement."""
_INSERT_QUESTION = (
    insert(TURNS)
    .values(
        {
            **{name: bindparam(name, type_=TURNS.c[name].type) for name in _INSERTED},
            "parent_id": _PARENT,
        }
    )
    .returning(TURNS.c.id, TURNS.c.parent_id)
)
_FINISH_TURN = update(TURNS).where(TURNS.c.id == bindparam("turn_id"))
_SAVE_PARTIAL = update(TURNS).where(TURNS.c.id == bindparam("turn_id"), TURNS.c.status == "running")
_FINISH_UNFINISHED = update(TURNS).where(
    TURNS.c.id == bindparam("turn_id"), TURNS.c.status.in_(("running", "interrupted"))
)


# Memory is read on every turn: built once, a statement skips SQLAlchemy's construction
# and cache-key work (about a fifth of the read's CPU, measured with cProfile).
_PATH_FROM = _path(bindparam("start_id", type_=TURNS.c.id.type))


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


class SqlTurnStore(TurnRecovery, TurnHistory, TurnTree, TurnApprovals):
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

    async def ping(self) -> None:
        await self._db.ping()


def _owned_by(instance_id: str) -> ColumnElement[bool]:
    """The row is this instance's to write: its own turn, or one stored before rows named one."""
    return or_(TURNS.c.instance_id.is_(None), TURNS.c.instance_id == instance_id)
