"""The few statements every turn runs, compiled once and sent by the driver itself.

On PostgreSQL asyncpg runs them on a small pool of its own, as its cached
prepared statements; on a SQLite file one aiosqlite connection in autocommit
does, the one writer SQLite has anyway, fed by aiosqlite's queue (one thread
hop a statement). SQLAlchemy's execution around one statement (the greenlet
hop, pool checkout, cursor adapter, result wrapping; on SQLite a thread hop
for each) cost more client CPU than the statement itself; the SQL, the
parameters and the column types stay SQLAlchemy's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import aiosqlite
import asyncpg
from sqlalchemy import Dialect, Select
from sqlalchemy.engine import URL
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.elements import BindParameter

from app.store.engine import (
    COMMAND_TIMEOUT_SECONDS,
    CONNECT_TIMEOUT_SECONDS,
    SQLITE_PRAGMAS,
    in_memory,
)

log = logging.getLogger(__name__)

Row = dict[str, Any]
Statement = Select[Any] | UpdateBase
_Processor = Callable[[Any], Any] | None


class _Bind:
    """One positional parameter: where its value comes from, and how its type sends it."""

    __slots__ = ("default", "name", "process", "required")

    def __init__(self, bind: BindParameter[Any], dialect: Dialect) -> None:
        self.name = bind.key
        self.required = bind.required
        self.default = bind.value
        """What SQLAlchemy itself put in the SQL, as a literal's value (SQLite's `OFFSET 0`)."""
        self.process = bind.type.dialect_impl(dialect).bind_processor(dialect)

    def value(self, params: Mapping[str, Any]) -> Any:
        value = params[self.name] if self.required else params.get(self.name, self.default)
        return value if self.process is None else self.process(value)


class Prepared:
    """One Core statement compiled once, with its parameters' order and its columns' types.

    `keys` are the parameters an INSERT or UPDATE sets (SQLAlchemy derives
    its column list from them). `Database.run` executes it.
    """

    def __init__(self, statement: Statement, dialect: Dialect, keys: Sequence[str] = ()) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=list(keys) or None)
        self.statement = statement
        self.sql = compiled.string
        self.verb = verb(self.sql)
        self._binds = [_Bind(compiled.binds[name], dialect) for name in compiled.positiontup or ()]
        self._columns: list[tuple[str, _Processor]] = [
            (str(column.key), column.type.dialect_impl(dialect).result_processor(dialect, None))
            for column in statement.exported_columns
        ]

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        """The positional arguments the driver takes, each as its column type sends it."""
        return [bind.value(params) for bind in self._binds]

    def rows(self, records: Sequence[Sequence[Any]]) -> list[Row]:
        """The driver's records as mappings, each value as its column type reads it."""
        columns = self._columns
        return [
            {
                name: value if process is None else process(value)
                for (name, process), value in zip(columns, record, strict=True)
            }
            for record in records
        ]


class Driver(Protocol):
    """Runs a prepared statement's SQL with positional arguments, without SQLAlchemy."""

    async def fetch(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]: ...

    async def close(self) -> None: ...


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


class SqliteWriter:
    """One connection for the per-turn statements, opened at first use like the engine's."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: aiosqlite.Connection | None = None
        self._opening = asyncio.Lock()

    async def fetch(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        conn = self._conn or await self._open()
        return list(await conn.execute_fetchall(sql, args))

    async def _open(self) -> aiosqlite.Connection:
        async with self._opening:
            if self._conn is None:
                # Autocommit: each statement is its own transaction, as on `statement()`.
                conn = await aiosqlite.connect(self._path, isolation_level=None)
                for pragma in SQLITE_PRAGMAS:
                    await conn.execute(pragma)
                self._conn = conn
            return self._conn

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


async def open_driver(url: URL, pool_size: int) -> Driver | None:
    if url.get_driver_name() == "asyncpg":
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
        )
        return AsyncpgDriver(pool, pool_size)
    database = url.database
    if url.get_backend_name() == "sqlite" and database and not in_memory(database):
        return SqliteWriter(database)
    return None


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Nothing to undo: the pool's connections only run single prepared statements.

    asyncpg's default reset sends `RESET ALL`, `UNLISTEN *`, `CLOSE ALL` and
    an advisory-unlock on every release, a round trip per statement for
    session state these statements never set (no SET, LISTEN, cursor or
    lock). asyncpg still rolls back a transaction left open before this runs.
    """


def verb(sql: str) -> str:
    return sql.lstrip().split(None, 1)[0].upper()
