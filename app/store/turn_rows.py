"""What the turn store's modules share: the turn row as a model, the clock, the path walk.

The turn store (`SqlTurnStore`, turns.py) is one class made of a part per
job: the turn writes (turns.py), instance recovery (turn_recovery.py), the
history (turn_history.py), the tree and cascading deletes (turn_tree.py) and
approvals (turn_approvals.py). Each part reads and writes `ai_session` with these.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, func, literal, select

from app.store.db import Database
from app.store.models import AI_ACTIVE_PATH as ACTIVE_PATHS
from app.store.models import AI_SESSION as TURNS
from app.store.models import StoredTurn


class TurnTableAccess:
    """The state every part of the turn store uses, set by `SqlTurnStore`."""

    _db: Database
    _instance_id: str | None


_MINE = (TURNS.c.user_id == bindparam("user_id"), TURNS.c.session_id == bindparam("session_id"))
_NEWEST = select(func.max(TURNS.c.id)).where(*_MINE).scalar_subquery()
_ACTIVE_LEAF = func.coalesce(
    select(ACTIVE_PATHS.c.leaf_id)
    .where(
        ACTIVE_PATHS.c.user_id == bindparam("user_id"),
        ACTIVE_PATHS.c.conversation_id == bindparam("session_id"),
        ACTIVE_PATHS.c.newest_id >= _NEWEST,
    )
    .scalar_subquery(),
    _NEWEST,
)
"""The active path's leaf: the chosen one while no newer turn came, else the newest turn."""


def _path_ids(start: ColumnElement[Any]) -> Select[Any]:
    """The ids of `start` and its ancestors, `limit` of them at most: a walk up the parents.

    The recursive CTE is nested in the statement that uses it, so that statement
    stays a plain SELECT; each step is one primary-key lookup.
    """
    anchor = select(TURNS.c.id, TURNS.c.parent_id, literal(1).label("depth")).where(
        TURNS.c.id == start, *_MINE, bindparam("limit") > 0
    )
    path = anchor.cte("path", recursive=True, nesting=True)
    up = TURNS.alias("up")
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
    return select(TURNS).where(TURNS.c.id.in_(_path_ids(start))).order_by(TURNS.c.id.desc())


def _now() -> datetime:
    return datetime.now(UTC)


def _turn(row: Mapping[Any, Any]) -> StoredTurn:
    """The row as its table model; its columns already gave every value its type."""
    return StoredTurn.model_construct(**row)
