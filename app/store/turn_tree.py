"""The turn store's conversation tree: reading it, choosing a branch, and deleting turns
or a whole conversation with what depends on them (files, the chosen path, the title, the
share, push configs).
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Delete, delete, exists, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.base import DeletedConversation, DeletedTurns, GoneTurn
from app.store.file_store import delete_file_rows
from app.store.models import AI_ACTIVE_PATH as ACTIVE_PATHS
from app.store.models import AI_FILE as FILES
from app.store.models import AI_SESSION as TURNS
from app.store.project_models import PROJECT_FILE as PROJECT_FILES
from app.store.push_configs import delete_push_configs, delete_turns_push_configs
from app.store.records import TurnStatus
from app.store.shares import delete_share
from app.store.titles import delete_title
from app.store.tree import ChosenLeaf, ConversationTree
from app.store.turn_rows import TurnTableAccess, _turn


class TurnTree(TurnTableAccess):
    """A conversation's branches, and deletes that keep the tree and its files whole."""

    async def get_tree(self, user_id: str, conversation_id: str) -> ConversationTree:
        async with self._db.statement() as conn:
            return await _read_tree(conn, user_id, conversation_id)

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
                conn,
                user_id,
                TURNS.c.id.in_(ids),
                FILES.c.id.in_(made) & (FILES.c.source == "generated"),
            )
            turns = (await conn.execute(delete(TURNS).where(TURNS.c.id.in_(ids)))).rowcount
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
        mine = (TURNS.c.user_id == user_id) & (TURNS.c.session_id == conversation_id)
        made_by_it = (FILES.c.source == "generated") & (FILES.c.session_id == conversation_id)
        async with self._db.begin() as conn:
            blob_keys = await _delete_files(conn, user_id, mine, made_by_it)
            rows = (
                await conn.execute(
                    delete(TURNS)
                    .where(mine)
                    .returning(TURNS.c.id, TURNS.c.create_time, TURNS.c.agent_type)
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
            select(TURNS.c.id)
            .where(TURNS.c.user_id == user_id, TURNS.c.session_id == conversation_id)
            .order_by(TURNS.c.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        stmt = (
            delete(TURNS)
            .where(TURNS.c.id == newest, TURNS.c.status.in_(statuses))
            .returning(TURNS.c.id, TURNS.c.create_time, TURNS.c.agent_type)
        )
        async with self._db.begin() as conn:
            row = (await conn.execute(stmt)).one_or_none()
            if row is None:
                return None
            await delete_turns_push_configs(conn, user_id, conversation_id, [row.id])
        return GoneTurn(row.id, row.create_time, row.agent_type)


async def _read_tree(conn: AsyncConnection, user_id: str, conversation_id: str) -> ConversationTree:
    turns = (TURNS.c.user_id == user_id) & (TURNS.c.session_id == conversation_id)
    rows = (await conn.execute(select(TURNS).where(turns).order_by(TURNS.c.id))).mappings().all()
    chosen = select(ACTIVE_PATHS.c.leaf_id, ACTIVE_PATHS.c.newest_id).where(
        ACTIVE_PATHS.c.user_id == user_id, ACTIVE_PATHS.c.conversation_id == conversation_id
    )
    leaf = (await conn.execute(chosen)).one_or_none() if rows else None
    return ConversationTree(
        [_turn(row) for row in rows],
        None if leaf is None else ChosenLeaf(leaf.leaf_id, leaf.newest_id),
    )


def _forget_path(user_id: str, conversation_id: str) -> Delete:
    return delete(ACTIVE_PATHS).where(
        ACTIVE_PATHS.c.user_id == user_id, ACTIVE_PATHS.c.conversation_id == conversation_id
    )


async def _choose(
    conn: AsyncConnection, user_id: str, conversation_id: str, leaf_id: int, newest_id: int | None
) -> ChosenLeaf:
    """Record the active leaf, valid until a turn newer than `newest_id` comes."""
    chosen = ChosenLeaf(leaf_id, newest_id or leaf_id)
    await conn.execute(_forget_path(user_id, conversation_id))
    await conn.execute(
        insert(ACTIVE_PATHS).values(
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
    used_here = select(TURNS.c.fileid).where(turns, TURNS.c.fileid.is_not(None))
    used_elsewhere = exists().where(TURNS.c.fileid == FILES.c.id, ~turns)
    attached = exists().where(PROJECT_FILES.c.file_id == FILES.c.id)
    only_here = select(FILES.c.id, FILES.c.blob_key).where(
        FILES.c.user_id == user_id, (FILES.c.id.in_(used_here) & ~used_elsewhere & ~attached) | made
    )
    files = (await conn.execute(only_here)).all()
    await delete_file_rows(conn, [row.id for row in files])
    return [row.blob_key for row in files]
