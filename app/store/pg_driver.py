"""The turn statements' driver on PostgreSQL: asyncpg's own pool (app/store/fast_path.py).

A module of its own so that asyncpg is imported only where the database is PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import asyncpg
from sqlalchemy.engine import URL

from app.store.db_errors import DRIVER_ERRORS
from app.store.engine import (
    ASYNCPG_POOLER_ARGS,
    COMMAND_TIMEOUT_SECONDS,
    CONNECT_TIMEOUT_SECONDS,
)

log = logging.getLogger(__name__)


async def open_asyncpg(url: URL, pool_size: int, *, transaction_pooler: bool) -> AsyncpgDriver:
    # Behind a transaction pooler no statement is cached (engine.ASYNCPG_POOLER_ARGS):
    # a round trip more per statement, for one that is safe on any server session.
    pooled = ASYNCPG_POOLER_ARGS if transaction_pooler else {}
    # min_size=0: nothing connects here, so the app starts while the server
    # is down; the driver opens the connections beside the start-up instead.
    pool = await asyncpg.create_pool(
        url.set(drivername="postgresql").render_as_string(hide_password=False),
        min_size=0,
        max_size=pool_size,
        max_inactive_connection_lifetime=0,
        timeout=CONNECT_TIMEOUT_SECONDS,
        command_timeout=COMMAND_TIMEOUT_SECONDS,
        reset=_keep_session,
        **pooled,
    )
    return AsyncpgDriver(pool, pool_size)


class AsyncpgDriver:
    """The turn statements' pool: opened in full just after start-up, and kept.

    Each connection PostgreSQL opens is a new server process. Opened on
    demand, the twenty a burst of fifty new streams needs were started in the
    middle of that burst, on the same cores, and held its slowest first
    events back by about a quarter (bench/README.md, "What the first burst
    is made of"). So the pool opens them in the background as soon as the
    app is up (a database that is down does not hold the start-up back; the
    pool then opens connections as statements need them) and, like the
    engine's pool and the Java original's, keeps them rather than closing
    idle ones.
    """

    errors = (*DRIVER_ERRORS, asyncpg.PostgresError, asyncpg.InterfaceError)

    def __init__(self, pool: asyncpg.Pool, size: int) -> None:
        self._pool = pool
        self._filling = asyncio.create_task(self._fill(size), name="database-pool-fill")

    async def fetch(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        async with self._pool.acquire() as conn:
            records: list[asyncpg.Record] = await conn.fetch(sql, *args)
            return records

    async def close(self) -> None:
        self._filling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._filling
        await self._pool.close()

    async def _fill(self, size: int) -> None:
        # Each held until all are taken, so each is a connection of its own.
        opening = [asyncio.ensure_future(self._pool.acquire()) for _ in range(size)]
        try:
            await asyncio.wait(opening)
        finally:
            for future in opening:
                future.cancel()  # a close() came first: stop those still connecting
            await asyncio.wait(opening)
            failed: list[BaseException] = []
            for future in opening:
                if future.cancelled():
                    continue
                error = future.exception()
                if error is None:
                    await self._pool.release(future.result())
                else:
                    failed.append(error)
        if failed:
            log.info(
                "opened %d of the database pool's %d connections ahead of use (%s);"
                " the others open when needed",
                size - len(failed),
                size,
                type(failed[0]).__name__,
            )


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Nothing to undo: the pool's connections only run single prepared statements.

    asyncpg's default reset sends `RESET ALL`, `UNLISTEN *`, `CLOSE ALL` and
    an advisory-unlock on every release, a round trip per statement for
    session state these statements never set (no SET, LISTEN, cursor or
    lock). asyncpg still rolls back a transaction left open before this runs.
    """
