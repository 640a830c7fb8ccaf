"""The active paths of a few conversations at once, in SQL: for a search and for titles.

store/tree.py works on one conversation read whole; a page of search hits or
of the list touches several conversations and needs only a little of each:
which version of a turn is on the active path (the one a search hit should
point to), and which first question the active path starts from (the
default title, which follows an edited first question). The walk is a
recursive CTE, up the parents from each conversation's active leaf, one
primary-key lookup a step; the active leaf is the chosen one while no newer
turn came, else the newest turn, as `ConversationTree.leaf_id` has it.

The conversations are named by a turn of each, so each is found by primary
key and its newest turn by the conversation's own index: SQLite, which keeps
no statistics, would otherwise read a user's every turn to find a few.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import CTE, ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.models import AI_ACTIVE_PATH as ACTIVE_PATHS
from app.store.models import AI_SESSION as TURNS


def active_leaf(user_id: str, conversation: ColumnElement[str]) -> ColumnElement[Any]:
    """The id of the active leaf of the user's conversation `conversation` (a column of the
    query this is part of): the chosen one while no newer turn came, else the newest."""
    newer = TURNS.alias("newer")
    newest = (
        select(func.max(newer.c.id))
        .where(newer.c.user_id == user_id, newer.c.session_id == conversation)
        .correlate_except(newer)
        .scalar_subquery()
    )
    chosen = (
        select(ACTIVE_PATHS.c.leaf_id)
        .where(
            ACTIVE_PATHS.c.user_id == user_id,
            ACTIVE_PATHS.c.conversation_id == conversation,
            ACTIVE_PATHS.c.newest_id >= newest,
        )
        .correlate_except(ACTIVE_PATHS)
        .scalar_subquery()
    )
    return func.coalesce(chosen, newest)


def active_paths(user_id: str, turn_ids: Collection[int]) -> CTE:
    """`(session_id, id, parent_id)` of every turn on the active path of the conversations
    that these turns of the user's are of."""
    named = TURNS.alias("named")
    # By primary key alone: the turns are the user's (found by the caller's own query), and
    # every turn read below is checked to be the user's.
    conversations = (
        select(named.c.session_id)
        .where(named.c.id.in_(list(turn_ids)))
        .distinct()
        .subquery("conversations")
    )
    leaf = TURNS.alias("leaf")
    anchor = (
        select(conversations.c.session_id, leaf.c.id, leaf.c.parent_id)
        .select_from(conversations)
        .join(leaf, leaf.c.id == active_leaf(user_id, conversations.c.session_id))
        .where(leaf.c.user_id == user_id)
    )
    path = anchor.cte("active_path", recursive=True)
    up = TURNS.alias("up")
    return path.union_all(
        select(path.c.session_id, up.c.id, up.c.parent_id).where(
            up.c.id == path.c.parent_id, up.c.user_id == user_id
        )
    )


async def active_first_questions(
    conn: AsyncConnection, user_id: str, turn_ids: Collection[int]
) -> dict[str, str]:
    """The first question of the active path of each conversation these turns are of (by
    conversation): for one whose first question was edited, which of them titles it."""
    if not turn_ids:
        return {}
    path = active_paths(user_id, turn_ids)
    # Ids grow down the tree: a path's smallest is its first question.
    roots = (
        select(path.c.session_id, func.min(path.c.id).label("root_id"))
        .group_by(path.c.session_id)
        .subquery("roots")
    )
    stmt = select(roots.c.session_id, TURNS.c.question).join(TURNS, TURNS.c.id == roots.c.root_id)
    rows = (await conn.execute(stmt)).all()
    return {row.session_id: row.question for row in rows}
