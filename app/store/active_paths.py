"""The active paths of many conversations at once, in SQL: for a search and for titles.

store/tree.py works on one conversation read whole; a search or a page of the
list touches many conversations and needs only a little of each: which of
some turns are on the active path (the version a search should point to),
and which first question the active path starts from (the default title,
which follows an edited first question). The walk is a recursive CTE, up
the parents from each conversation's active leaf, one primary-key lookup a
step; the active leaf is the chosen one while no newer turn came, else the
newest turn, as `ConversationTree.leaf_id` has it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import CTE, Select, and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.models import AI_ACTIVE_PATH as A
from app.store.models import AI_SESSION as T


def active_paths(user_id: str, conversations: Select[Any]) -> CTE:
    """`(session_id, id)` of every turn on the active path of each of the user's
    conversations that `conversations` (a SELECT of conversation ids) names."""
    newest = (
        select(T.c.session_id, func.max(T.c.id).label("newest_id"))
        .where(T.c.user_id == user_id, T.c.session_id.in_(conversations))
        .group_by(T.c.session_id)
        .subquery("newest")
    )
    chosen = and_(
        A.c.user_id == user_id,
        A.c.conversation_id == newest.c.session_id,
        A.c.newest_id >= newest.c.newest_id,
    )
    leaf = T.alias("leaf")
    anchor = (
        select(newest.c.session_id, leaf.c.id, leaf.c.parent_id)
        .select_from(newest.outerjoin(A, chosen))
        .join(leaf, leaf.c.id == func.coalesce(A.c.leaf_id, newest.c.newest_id))
        .where(leaf.c.user_id == user_id)
    )
    path = anchor.cte("active_path", recursive=True)
    up = T.alias("up")
    return path.union_all(
        select(path.c.session_id, up.c.id, up.c.parent_id).where(
            up.c.id == path.c.parent_id, up.c.user_id == user_id
        )
    )


async def active_first_questions(
    conn: AsyncConnection, user_id: str, conversation_ids: Collection[str]
) -> dict[str, str]:
    """The first question of the active path of each of these conversations whose first
    question was edited (more than one first question); the others are left out, their
    one first question being the active one."""
    if not conversation_ids:
        return {}
    edited = (
        select(T.c.session_id)
        .where(
            T.c.user_id == user_id,
            T.c.session_id.in_(list(conversation_ids)),
            T.c.parent_id.is_(None),
        )
        .group_by(T.c.session_id)
        .having(func.count() > 1)
    )
    path = active_paths(user_id, edited)
    # Ids grow down the tree: a path's smallest is its first question.
    roots = (
        select(path.c.session_id, func.min(path.c.id).label("root_id"))
        .group_by(path.c.session_id)
        .subquery("roots")
    )
    stmt = select(roots.c.session_id, T.c.question).join(T, T.c.id == roots.c.root_id)
    rows = (await conn.execute(stmt)).all()
    return {row.session_id: row.question for row in rows}
