"""The app's one database: opened with the app, migrated on start, closed with it.

Every store module reaches SQL through a `Database`, so driver choices live in
one place (`engine`: opening and migrating; `fast_path`: the per-turn
statements on the driver itself). Driver and SQLAlchemy exceptions do not
leave this module's context managers (nor `run`): `db_errors` says what each
means.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Any

from sqlalchemy import Dialect, Table, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from app.store.base import StoreError, StoreUnavailable
from app.store.db_errors import translate
from app.store.engine import MIGRATION_LOCK_KEY, at_head, create_engine, upgrade_to_head
from app.store.fast_path import Driver, Prepared, Row, Statement, open_driver, verb

StatementSpan = Callable[[str, str], AbstractContextManager[object]]
"""Given a statement's verb and SQL, a context that lasts while it runs (a trace span)."""


class Database:
    """An async engine and session factory, usable only inside `Database.open`.

    Single Core statements go through `statement()`, several that must
    commit together through `begin()`, ORM work through `session()`, and the
    per-turn statements through `run()` (the fastest path). All translate
    errors as the module says.
    """

    def __init__(self, engine: AsyncEngine, driver: Driver | None = None) -> None:
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
    async def open(
        cls,
        url: str,
        *,
        pool_size: int,
        migrate: bool,
        migrate_url: str | None = None,
        transaction_pooler: bool = False,
    ) -> AsyncIterator[Database]:
        """Build the engine, optionally migrate to the newest revision, dispose on exit.

        Without `migrate` nothing connects here, so an app can start while the
        database is down and report it through `ping()`. With it, the migration
        runs on `migrate_url` when given (the database itself, when `url` is a
        pooler's), on a connection of its own closed after it. `transaction_pooler`:
        `url` is a pooler in transaction mode (`engine.POOLER_CONNECT_ARGS`).
        """
        parsed = make_url(url)
        engine = _create(parsed, pool_size, transaction_pooler)
        driver = await open_driver(parsed, pool_size, transaction_pooler=transaction_pooler)
        db = cls(engine, driver)
        try:
            if migrate and migrate_url:
                direct = _create(make_url(migrate_url), 1, transaction_pooler=False)
                try:
                    await _migrate(direct)
                finally:
                    await direct.dispose()
            elif migrate:
                await _migrate(engine)
            yield db
        finally:
            db._closed = True
            if driver is not None:
                await driver.close()
            await engine.dispose()

    @property
    def dialect(self) -> Dialect:
        return self.engine.dialect

    def upsert(self, table: Table) -> Any:
        """An INSERT into `table` in the dialect's own form, the one with
        `on_conflict_do_update` (PostgreSQL's and SQLite's name it alike)."""
        insert = postgresql.insert if self.dialect.name == "postgresql" else sqlite.insert
        return insert(table)

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
        except self._driver.errors as exc:
            raise translate(exc, self.engine.url) from exc
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
            raise translate(exc, self.engine.url) from exc

    async def ping(self) -> None:
        """Raise `StoreUnavailable` unless a round trip succeeds on each pool (SQLAlchemy's, and
        the driver's own for the turn statements)."""
        async with self.statement() as conn:
            await conn.execute(text("SELECT 1"))
        if self._driver is not None:
            try:
                await self._driver.fetch("SELECT 1", ())
            except self._driver.errors as exc:
                raise translate(exc, self.engine.url) from exc

    @asynccontextmanager
    async def _connect(self, engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
        if self._closed:
            raise StoreError("the database is closed")
        try:
            async with engine.begin() as conn:
                yield conn
        except (OSError, TimeoutError, sa_exc.SQLAlchemyError) as exc:
            raise translate(exc, self.engine.url) from exc

    def _count(self, *args: Any) -> None:
        self.statements[verb(args[2])] += 1


def _create(url: URL, pool_size: int, transaction_pooler: bool) -> AsyncEngine:
    try:
        return create_engine(url, pool_size, transaction_pooler=transaction_pooler)
    except OSError as exc:
        raise StoreUnavailable(
            f"database unavailable at {url.render_as_string(hide_password=True)}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


async def _migrate(engine: AsyncEngine) -> None:
    try:
        async with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Instances starting together would otherwise race to create the same
                # tables; the lock is released when this transaction ends.
                await conn.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
                )
            if not await conn.run_sync(at_head):
                await conn.run_sync(upgrade_to_head)
    except (OSError, TimeoutError, sa_exc.SQLAlchemyError) as exc:
        raise translate(exc, engine.url) from exc
