"""The app's one database engine: opened with the app, migrated on start, closed with it.

Every store module reaches SQL through a `Database`, so driver choices live
in one place: SQLite (the embedded default) gets WAL and a busy timeout so
readers never block the writer; PostgreSQL gets a sized pool, a liveness
check on checkout and short connect timeouts so a dead server answers 503 in
seconds, not minutes.

The few statements every turn runs are `Prepared`: compiled once, and run
by the driver itself: on PostgreSQL by asyncpg on a small pool of its own,
as its cached prepared statements; on a SQLite file by one aiosqlite
connection in autocommit, the one writer SQLite has anyway, fed by
aiosqlite's queue (one thread hop a statement). SQLAlchemy's execution
around one statement (the greenlet hop, pool checkout, cursor adapter,
result wrapping; on SQLite a thread hop for each) cost more client CPU than
the statement itself; the SQL, the parameters and the column types stay
SQLAlchemy's.

Driver and SQLAlchemy exceptions do not leave this module's context
managers (nor `run`): connection trouble becomes `StoreUnavailable`, anything else a
`StoreError`, with a message that never contains the URL's password.
Schema changes are Alembic's (`migrations/`, beside `app/` in the repo);
this module only applies them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote_plus

import aiosqlite
import asyncpg
from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Dialect, Select, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.elements import BindParameter
from sqlmodel.ext.asyncio.session import AsyncSession

from app.store.base import StoreError, StoreUnavailable

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
"""Alembic's script folder, found from this file so the working directory never matters."""

log = logging.getLogger(__name__)

_CONNECT_TIMEOUT_SECONDS = 5.0
_COMMAND_TIMEOUT_SECONDS = 30.0
_SQLITE_BUSY_TIMEOUT_MS = 5000
_MIGRATION_LOCK_KEY = 0x646F646F
"""Any fixed number: the PostgreSQL advisory lock instances take to migrate one at a time."""

# SQLSTATE classes meaning "the server cannot serve us now", not "the query is wrong":
# connection exception, invalid authorization, unknown database, insufficient
# resources (too many connections), operator intervention (shutdown, starting up).
_UNAVAILABLE_SQLSTATES = ("08", "28", "3D", "53", "57P")


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
        self.verb = _verb(self.sql)
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


class _Driver(Protocol):
    """Runs a prepared statement's SQL with positional arguments, without SQLAlchemy."""

    async def fetch(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]: ...

    async def close(self) -> None: ...


class _AsyncpgDriver:
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


class _SqliteWriter:
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
                for pragma in _SQLITE_PRAGMAS:
                    await conn.execute(pragma)
                self._conn = conn
            return self._conn

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


StatementSpan = Callable[[str, str], AbstractContextManager[object]]
"""Given a statement's verb and SQL, a context that lasts while it runs (a trace span)."""


class Database:
    """An async engine and session factory, usable only inside `Database.open`.

    Single Core statements go through `statement()`, several that must
    commit together through `begin()`, ORM work through `session()`, and the
    per-turn statements through `run()` (the fastest path). All translate
    errors as the module says.
    """

    def __init__(self, engine: AsyncEngine, driver: _Driver | None = None) -> None:
        self.engine = engine
        self._driver = driver
        self.statements: Counter[str] = Counter()
        """Statements sent, by their first word (`INSERT`, `WITH`, …), on every path: so a
        test or the benchmark can hold a turn to its few statements."""
        event.listen(engine.sync_engine, "before_cursor_execute", self._count)
        self.statement_span: StatementSpan | None = None
        """Wraps each statement `run()` sends on the driver itself (telemetry); statements
        through SQLAlchemy are seen by its events. None, the default, costs nothing."""
        self.sessionmaker = async_sessionmaker(engine, class_=AsyncSession, expire_on_commit=False)
        self.safe_url = engine.url.render_as_string(hide_password=True)
        """The URL with its password masked, fit for logs and error messages."""
        # One statement is atomic by itself: on PostgreSQL autocommit saves the BEGIN
        # and COMMIT round trips. SQLite's driver is faster in a plain transaction.
        self._statement_engine = (
            engine.execution_options(isolation_level="AUTOCOMMIT")
            if engine.dialect.name == "postgresql"
            else engine
        )
        self._closed = False

    @classmethod
    @asynccontextmanager
    async def open(cls, url: str, *, pool_size: int, migrate: bool) -> AsyncIterator[Database]:
        """Build the engine, optionally migrate to the newest revision, dispose on exit.

        Without `migrate` nothing connects here, so an app can start while the
        database is down and report it through `ping()`.
        """
        parsed = make_url(url)
        try:
            engine = _create_engine(parsed, pool_size)
        except OSError as exc:
            raise StoreUnavailable(
                f"database unavailable at {parsed.render_as_string(hide_password=True)}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        driver = await _open_driver(parsed, pool_size)
        db = cls(engine, driver)
        try:
            if migrate:
                await db._migrate()
            yield db
        finally:
            db._closed = True
            if driver is not None:
                await driver.close()
            await engine.dispose()

    @property
    def dialect(self) -> Dialect:
        return self.engine.dialect

    def prepare(self, statement: Statement, keys: Sequence[str] = ()) -> Prepared:
        return Prepared(statement, self.engine.dialect, keys)

    async def run(self, prepared: Prepared, params: Mapping[str, Any]) -> list[Row]:
        """Execute one statement alone (atomic by itself) and return its rows, if any.

        The driver runs it (autocommit, as `statement()`); where there is no
        driver of ours (an in-memory SQLite) it goes through `statement()`.
        """
        if self._driver is None:
            async with self.statement() as conn:
                result = await conn.execute(prepared.statement, dict(params))
                return [dict(row) for row in result.mappings()] if result.returns_rows else []
        if self._closed:
            raise StoreError("the database is closed")
        self.statements[prepared.verb] += 1
        args = prepared.args(params)
        span = self.statement_span
        try:
            if span is None:
                records = await self._driver.fetch(prepared.sql, args)
            else:
                with span(prepared.verb, prepared.sql):
                    records = await self._driver.fetch(prepared.sql, args)
        except _DRIVER_ERRORS as exc:
            raise self._translate(exc) from exc
        return prepared.rows(records)

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A connection in a transaction, committed when the block ends without error."""
        async with self._connect(self.engine) as conn:
            yield conn

    @asynccontextmanager
    async def statement(self) -> AsyncIterator[AsyncConnection]:
        """A connection for statements that are each atomic alone (one write, or reads).

        Cheaper than `begin()` where the backend allows, but statements in the
        block may not commit together: use `begin()` when they must.
        """
        async with self._connect(self._statement_engine) as conn:
            yield conn

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """An ORM session in a transaction, committed when the block ends without error."""
        if self._closed:
            raise StoreError("the database is closed")
        try:
            async with self.sessionmaker() as session, session.begin():
                yield session
        except (OSError, TimeoutError, sa_exc.SQLAlchemyError) as exc:
            raise self._translate(exc) from exc

    async def ping(self) -> None:
        """Raise `StoreUnavailable` unless a round trip succeeds on each pool (SQLAlchemy's, and
        the driver's own for the turn statements)."""
        async with self.statement() as conn:
            await conn.execute(text("SELECT 1"))
        if self._driver is not None:
            try:
                await self._driver.fetch("SELECT 1", ())
            except _DRIVER_ERRORS as exc:
                raise self._translate(exc) from exc

    @asynccontextmanager
    async def _connect(self, engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
        if self._closed:
            raise StoreError("the database is closed")
        try:
            async with engine.begin() as conn:
                yield conn
        except (OSError, TimeoutError, sa_exc.SQLAlchemyError) as exc:
            raise self._translate(exc) from exc

    def _count(self, *args: Any) -> None:
        self.statements[_verb(args[2])] += 1

    async def _migrate(self) -> None:
        async with self.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Instances starting together would otherwise race to create the same
                # tables; the lock is released when this transaction ends.
                await conn.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY}
                )
            await conn.run_sync(_upgrade_to_head)

    def _translate(self, exc: BaseException) -> StoreError:
        reason = _describe(exc)
        password = self.engine.url.password
        if password:
            for form in {str(password), quote_plus(str(password))}:
                reason = reason.replace(form, "***")
        if _is_unavailable(exc):
            return StoreUnavailable(f"database unavailable at {self.safe_url}: {reason}")
        return StoreError(f"database error: {reason}")


_DRIVER_ERRORS = (
    OSError,
    TimeoutError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    sqlite3.Error,
)


async def _open_driver(url: URL, pool_size: int) -> _Driver | None:
    if url.get_driver_name() == "asyncpg":
        # min_size=0: nothing connects here, so the app starts while the server
        # is down; the driver opens the connections beside the start-up instead.
        pool = await asyncpg.create_pool(
            url.set(drivername="postgresql").render_as_string(hide_password=False),
            min_size=0,
            max_size=pool_size,
            max_inactive_connection_lifetime=0,
            timeout=_CONNECT_TIMEOUT_SECONDS,
            command_timeout=_COMMAND_TIMEOUT_SECONDS,
            reset=_keep_session,
        )
        return _AsyncpgDriver(pool, pool_size)
    database = url.database
    if url.get_backend_name() == "sqlite" and database and not _in_memory(database):
        return _SqliteWriter(database)
    return None


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Nothing to undo: the pool's connections only run single prepared statements.

    asyncpg's default reset sends `RESET ALL`, `UNLISTEN *`, `CLOSE ALL` and
    an advisory-unlock on every release, a round trip per statement for
    session state these statements never set (no SET, LISTEN, cursor or
    lock). asyncpg still rolls back a transaction left open before this runs.
    """


def _in_memory(database: str) -> bool:
    return database == ":memory:" or database.startswith("file:")


def _verb(sql: str) -> str:
    return sql.lstrip().split(None, 1)[0].upper()


def _create_engine(url: URL, pool_size: int) -> AsyncEngine:
    if url.get_backend_name() == "sqlite":
        _ensure_sqlite_dir(url)
        # No pool sizing: SQLite has one writer whatever the pool, and WAL lets
        # readers run beside it; SQLAlchemy's default pool for a file suits that.
        engine = create_async_engine(url)
        event.listen(engine.sync_engine, "connect", _configure_sqlite)
        return engine
    connect_args: dict[str, Any] = {}
    asyncpg = url.get_driver_name() == "asyncpg"
    if asyncpg:
        connect_args = {
            "timeout": _CONNECT_TIMEOUT_SECONDS,
            "command_timeout": _COMMAND_TIMEOUT_SECONDS,
        }
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        # SQLAlchemy's ping is BEGIN, ";" and ROLLBACK: three round trips on every
        # checkout, three checkouts a turn. asyncpg already knows when the server
        # closed a connection, so for it a local look replaces the ping.
        pool_pre_ping=not asyncpg,
        connect_args=connect_args,
    )
    if asyncpg:
        event.listen(engine.sync_engine, "checkout", _discard_closed)
    return engine


def _discard_closed(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    """Refuse a pooled connection the server has closed (a restart): the pool takes another."""
    if record.driver_connection.is_closed():
        raise sa_exc.DisconnectionError("the server closed this pooled connection")


def _ensure_sqlite_dir(url: URL) -> None:
    database = url.database
    if not database or _in_memory(database):
        return
    Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)


_SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    f"PRAGMA busy_timeout={_SQLITE_BUSY_TIMEOUT_MS}",
    "PRAGMA foreign_keys=ON",
    # Safe with WAL (a crash loses at most the last commits, never corrupts) and much faster.
    "PRAGMA synchronous=NORMAL",
)


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    for pragma in _SQLITE_PRAGMAS:
        cursor.execute(pragma)
    cursor.close()


def _upgrade_to_head(connection: Connection) -> None:
    config = Config()
    # ConfigParser interpolates '%', which a checkout path may contain.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        orig = current.orig if isinstance(current, sa_exc.StatementError) else None
        current = orig if isinstance(orig, BaseException) else current.__cause__
    return chain


def _is_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, sa_exc.DBAPIError) and (
        exc.connection_invalidated
        or isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError)
    ):
        return True
    if isinstance(exc, sa_exc.TimeoutError):  # no pooled connection came free in time
        return True
    if isinstance(exc, asyncpg.InterfaceError | sqlite3.OperationalError):
        return True  # the drivers' own: the connection is gone, or the file cannot be used
    for cause in _causes(exc):
        if isinstance(cause, OSError | TimeoutError):
            return True
        sqlstate = getattr(cause, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith(_UNAVAILABLE_SQLSTATES):
            return True
    return False


def _describe(exc: BaseException) -> str:
    """The driver's own first line, without SQLAlchemy's SQL text and parameters."""
    inner = _causes(exc)[-1]
    lines = str(inner).strip().splitlines()
    first = lines[0] if lines else ""
    return f"{type(inner).__name__}: {first}"[:300]
