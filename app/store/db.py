"""The app's one database engine: opened with the app, migrated on start, closed with it.

Every store module reaches SQL through a `Database`, so driver choices live
in one place: SQLite (the embedded default) gets WAL and a busy timeout so
readers never block the writer; PostgreSQL gets a sized pool, a liveness
check on checkout and short connect timeouts so a dead server answers 503 in
seconds, not minutes.

Driver and SQLAlchemy exceptions do not leave this module's context
managers: connection trouble becomes `StoreUnavailable`, anything else a
`StoreError`, with a message that never contains the URL's password.
Schema changes are Alembic's (`migrations/`, beside `app/` in the repo);
this module only applies them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    async_sessionmaker,
    create_async_engine,
)
from sqlmodel.ext.asyncio.session import AsyncSession

from app.store.base import StoreError, StoreUnavailable

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
"""Alembic's script folder, found from this file so the working directory never matters."""

_CONNECT_TIMEOUT_SECONDS = 5.0
_COMMAND_TIMEOUT_SECONDS = 30.0
_SQLITE_BUSY_TIMEOUT_MS = 5000
_MIGRATION_LOCK_KEY = 0x646F646F
"""Any fixed number: the PostgreSQL advisory lock instances take to migrate one at a time."""

# SQLSTATE classes meaning "the server cannot serve us now", not "the query is wrong":
# connection exception, invalid authorization, unknown database, insufficient
# resources (too many connections), operator intervention (shutdown, starting up).
_UNAVAILABLE_SQLSTATES = ("08", "28", "3D", "53", "57P")


class Database:
    """An async engine and session factory, usable only inside `Database.open`.

    Single Core statements go through `statement()` (the fastest path, used
    per turn), several that must commit together through `begin()`, ORM work
    through `session()`. All three translate errors as the module says.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
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
        db = cls(engine)
        try:
            if migrate:
                await db._migrate()
            yield db
        finally:
            db._closed = True
            await engine.dispose()

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
        """Raise `StoreUnavailable` unless a round trip to the server succeeds."""
        async with self.statement() as conn:
            await conn.execute(text("SELECT 1"))

    @asynccontextmanager
    async def _connect(self, engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
        if self._closed:
            raise StoreError("the database is closed")
        try:
            async with engine.begin() as conn:
                yield conn
        except (OSError, TimeoutError, sa_exc.SQLAlchemyError) as exc:
            raise self._translate(exc) from exc

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
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={_SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    # Safe with WAL (a crash loses at most the last commits, never corrupts) and much faster.
    cursor.execute("PRAGMA synchronous=NORMAL")
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
