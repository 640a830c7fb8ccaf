"""The graph's checkpoint store, on the service's own database, with LangGraph's savers.

PostgreSQL (`DATABASE_URL` `postgresql+…`): `AsyncPostgresSaver` on a psycopg
pool of its own (LangGraph's saver speaks psycopg 3; the app's queries stay
on asyncpg), in the app's database. SQLite: `AsyncSqliteSaver` in a file
beside the app's (`app.db` -> `app.db-checkpoints`), because SQLite has one
writer per file: in the same file a step's checkpoint writes queued behind
the turns' writes and theirs behind them, and a shutdown mid-research left
the file locked for the next instance's migration (seen in a test, never
with two files). A write a stop cancelled before its commit leaves its transaction
open, and a statement a cancelled read left unfinished makes closing the connection
only a zombie's close, which keeps that transaction's lock until the statement is
garbage collected: the next instance's first checkpoint then waited 5 s and failed
as "database is locked". So the transaction is rolled back before the connection
closes. Either creates its tables when opened, at start-up.

Each deep-research turn has a thread of its own (`turn_thread`), because a
conversation is a tree of turns: a turn that goes on with its parent's
research (the answer to its question, a "continue") starts from a copy of
the parent's checkpoint (`copy_checkpoint`), so the parent's own thread stays
as it was for another branch, a regeneration reuses a turn's research from
its thread, and deleting turns deletes exactly their threads. Research
stored before threads were per turn is in the conversation's thread
(`thread_id`), read for a turn that has none of its own when that research
began on the turn's branch.

The psycopg pool checks each connection as it lends it (an empty query, one
round trip on a checkout the saver makes about 19 times a turn): psycopg
reads nothing while a connection is idle, so after a database restart the
pool's connections look alive until used, and the first research on each
instance failed `AdminShutdown`. asyncpg, for the app's own statements, sees
the server close a connection as it happens and reconnects on checkout.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite
import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool
from sqlalchemy.engine import make_url

from app.core.run import ConversationKey
from app.store.base import StoreUnavailable

SETUP_LOCK_KEY = 0x6C676370
"""The advisory lock that makes instances create the checkpoint tables one at a time."""
SETUP_POLL_SECONDS = 0.05
PING_TIMEOUT_SECONDS = 5.0
"""Longest `/ready` waits for a checkpoint connection, as for the app's own pools."""
POOL_MAX_SIZE = 10
"""Connections the Postgres saver may hold: one per checkpoint write in flight."""


@asynccontextmanager
async def _one_instance_at_a_time(
    pool: AsyncConnectionPool[AsyncConnection[DictRow]],
) -> AsyncIterator[None]:
    """Hold the setup lock, so instances starting together do not race to make the tables.

    The saver's migrations take no lock of their own. The lock is a transaction's,
    held by a transaction kept open on a connection of its own while they run on
    others: a session's lock, behind a transaction pooler, is taken on one server
    session and its unlock sent to another, so it stays held by a session no one
    uses and every later start waits for it forever. It is polled, each try a
    transaction of its own, not waited for: the migrations build an index
    CONCURRENTLY, which waits for the transactions with a statement running as it
    starts, a blocked lock of another instance's included, and that instance waits
    for this one: a deadlock PostgreSQL does not detect. And the lock is taken in a
    simple query (no parameter, not prepared): a statement of the extended protocol
    leaves its portal's snapshot to its transaction, and the index would then wait
    for the holding transaction, which waits for the index.
    """
    take = sql.SQL("SELECT pg_try_advisory_xact_lock({}) AS got").format(SETUP_LOCK_KEY)
    async with pool.connection() as conn:
        while True:
            async with conn.transaction():
                cursor = await conn.execute(take, prepare=False)
                row = await cursor.fetchone()
                if row is not None and row["got"]:
                    yield
                    return
            await asyncio.sleep(SETUP_POLL_SECONDS)


def sqlite_path(database: str | None) -> str:
    """The checkpoint file beside the app's SQLite file; in memory when the app is."""
    if not database or database == ":memory:":
        return ":memory:"
    return f"{database}-checkpoints"


def thread_id(key: ConversationKey) -> str:
    """The user and the conversation: a conversation id never contains `/`.

    Where research was kept before each turn had its own thread.
    """
    return f"{key.user_id}/{key.conversation_id}"


def turn_thread(key: ConversationKey, turn_id: int) -> str:
    """The thread of one turn's research."""
    return f"{thread_id(key)}/{turn_id}"


def thread_config(thread: str) -> RunnableConfig:
    """A thread's latest checkpoint."""
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


async def copy_checkpoint(
    saver: BaseCheckpointSaver[str], source: RunnableConfig, thread: str, *, writes: bool
) -> bool:
    """Put the checkpoint `source` names as `thread`'s latest; False when there is none.

    With `writes`, the checkpoint's pending writes come too: what a stopped step's
    finished tasks wrote, and a question waiting for its answer. Without them, the
    step that followed the checkpoint runs again from it (a report written anew).
    """
    found = await saver.aget_tuple(source)
    if found is None:
        return False
    checkpoint = found.checkpoint
    target = await saver.aput(
        thread_config(thread), checkpoint, found.metadata, dict(checkpoint["channel_versions"])
    )
    pending = (found.pending_writes or []) if writes else []
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in pending:
        by_task.setdefault(task_id, []).append((channel, value))
    for task_id, task_writes in by_task.items():
        await saver.aput_writes(target, task_writes, task_id)
    return True


async def delete_threads(saver: BaseCheckpointSaver[str], threads: Iterable[str]) -> None:
    for thread in threads:
        await saver.adelete_thread(thread)


async def ping(saver: BaseCheckpointSaver[str]) -> None:
    """One round trip on the Postgres saver's own pool; raises `StoreUnavailable` if it fails.

    A SQLite saver is a file beside the app's, with nothing to reach.
    """
    pool = saver.conn if isinstance(saver, AsyncPostgresSaver) else None
    if not isinstance(pool, AsyncConnectionPool):
        return
    try:
        async with pool.connection(timeout=PING_TIMEOUT_SECONDS) as conn:
            await conn.execute("SELECT 1")
    except (psycopg.Error, OSError) as exc:
        # The type only: psycopg's messages may quote the connection string.
        reason = type(exc).__name__
        raise StoreUnavailable(f"the checkpoint store is unavailable: {reason}") from exc


@asynccontextmanager
async def open_checkpointer(
    database_url: str, *, transaction_pooler: bool = False
) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """The saver for `database_url`, its tables created; closed on exit.

    Its statements are prepared on the server (as LangGraph's own connections do),
    except behind a transaction pooler (`transaction_pooler`), where a prepared
    statement would be on one server session and its next use on another.
    """
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        prepare_threshold = None if transaction_pooler else 0
        pool: AsyncConnectionPool[AsyncConnection[DictRow]] = AsyncConnectionPool(
            conninfo,
            connection_class=AsyncConnection[DictRow],
            kwargs={
                "autocommit": True,
                "prepare_threshold": prepare_threshold,
                "row_factory": dict_row,
            },
            min_size=1,
            max_size=POOL_MAX_SIZE,
            open=False,
            check=AsyncConnectionPool.check_connection,
        )
        async with pool:
            postgres = AsyncPostgresSaver(pool)
            async with _one_instance_at_a_time(pool):
                await postgres.setup()
            yield postgres
        return
    if url.get_backend_name() != "sqlite":
        raise ValueError(f"no checkpoint store for {url.get_backend_name()} databases")
    async with aiosqlite.connect(sqlite_path(url.database)) as conn:
        sqlite = AsyncSqliteSaver(conn)
        await sqlite.setup()
        try:
            yield sqlite
        finally:
            await conn.rollback()
