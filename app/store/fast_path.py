"""The few statements every turn runs, compiled once and sent by the driver itself.

On PostgreSQL asyncpg runs them on a small pool of its own, as its cached
prepared statements (uncached behind a transaction pooler: `DB_TRANSACTION_POOLER`);
on a SQLite file one aiosqlite connection in autocommit does, the one writer
SQLite has anyway, fed by aiosqlite's queue (one thread hop a statement).
SQLAlchemy's execution around one statement (the greenlet hop, pool checkout,
cursor adapter, result wrapping; on SQLite a thread hop for each) cost more
client CPU than the statement itself; the SQL, the parameters and the column
types stay SQLAlchemy's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import aiosqlite
from sqlalchemy import CompoundSelect, Dialect, Select
from sqlalchemy.engine import URL
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.elements import BindParameter

from app.store.db_errors import DRIVER_ERRORS
from app.store.engine import SQLITE_PRAGMAS, in_memory

log = logging.getLogger(__name__)

Row = dict[str, Any]
Statement = Select[Any] | CompoundSelect[Any] | UpdateBase
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

    errors: tuple[type[BaseException], ...]
    """What its statements raise when the database refuses or fails them."""

    async def fetch(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]: ...

    async def close(self) -> None: ...


class SqliteWriter:
    """One connection for the per-turn statements, opened at first use like the engine's."""

    errors = DRIVER_ERRORS

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


async def open_driver(url: URL, pool_size: int, *, transaction_pooler: bool) -> Driver | None:
    if url.get_driver_name() == "asyncpg":
        # Imported here: asyncpg (its hundreds of error classes) is no cost on SQLite.
        from app.store.pg_driver import open_asyncpg

        return await open_asyncpg(url, pool_size, transaction_pooler=transaction_pooler)
    database = url.database
    if url.get_backend_name() == "sqlite" and database and not in_memory(database):
        return SqliteWriter(database)
    return None


def verb(sql: str) -> str:
    return sql.lstrip().split(None, 1)[0].upper()
