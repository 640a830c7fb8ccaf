"""Opening the database's engine and bringing its schema to the newest revision.

SQLite (the embedded default) gets WAL and a busy timeout so readers never
block the writer; PostgreSQL gets a sized pool, a liveness check on checkout
and short connect timeouts so a dead server answers 503 in seconds, not
minutes. Schema changes are Alembic's (`migrations/`, beside `app/` in the
repo); this module only applies them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, event, inspect, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
"""Alembic's script folder, found from this file so the working directory never matters."""
CONNECT_TIMEOUT_SECONDS = 5.0
COMMAND_TIMEOUT_SECONDS = 30.0
_SQLITE_BUSY_TIMEOUT_MS = 5000
MIGRATION_LOCK_KEY = 0x646F646F
"""Any fixed number: the PostgreSQL advisory lock instances take to migrate one at a time."""
_REVISION = re.compile(r'^revision: str = "([^"]+)"', re.MULTILINE)


ASYNCPG_POOLER_ARGS: dict[str, Any] = {
    "statement_cache_size": 0,
    "server_settings": {"client_encoding": "UTF8"},
}
"""asyncpg's connections behind a pooler in transaction mode (`DB_TRANSACTION_POOLER`).

A cached statement is a named one, prepared on whichever server session the
pooler lent: the next transaction may get another session, where the name is
unknown, or already taken by another client's (`DuplicatePreparedStatementError`
on `__asyncpg_stmt_1__`, which every process names its first). Without a cache
asyncpg prepares an unnamed statement, only to learn its types, and parses it
again in the same message as its execution, which no pooler splits.

And the encoding as the server names it: asyncpg asks for `utf-8`, which a
pooler compares as text with the `UTF8` of a session another client used, and
sets before lending it (three `SET client_encoding` a chat turn behind PgBouncer,
bench/README.md "What a turn costs the shared engines").
"""
POOLER_CONNECT_ARGS: dict[str, Any] = {**ASYNCPG_POOLER_ARGS, "prepared_statement_cache_size": 0}
"""The engine's: SQLAlchemy's own statement cache off too."""


def create_engine(url: URL, pool_size: int, *, transaction_pooler: bool = False) -> AsyncEngine:
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
            "timeout": CONNECT_TIMEOUT_SECONDS,
            "command_timeout": COMMAND_TIMEOUT_SECONDS,
        }
        if transaction_pooler:
            connect_args |= POOLER_CONNECT_ARGS
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
    if not database or in_memory(database):
        return
    Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)


SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    f"PRAGMA busy_timeout={_SQLITE_BUSY_TIMEOUT_MS}",
    "PRAGMA foreign_keys=ON",
    # Safe with WAL (a crash loses at most the last commits, never corrupts) and much faster.
    "PRAGMA synchronous=NORMAL",
)


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    for pragma in SQLITE_PRAGMAS:
        cursor.execute(pragma)
    cursor.close()


def head_revision() -> str:
    """The newest migration's revision, read from its file (numbered `NNNN_what.py`).

    So a start on a database already at it needs no Alembic: importing it and
    reading every migration cost each worker a tenth of a second and 9 MB kept.
    """
    newest = max((MIGRATIONS_DIR / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))
    found = _REVISION.search(newest.read_text())
    if found is None:
        raise RuntimeError(f"{newest.name} names no revision")
    return found.group(1)


def at_head(connection: Connection) -> bool:
    if not inspect(connection).has_table("alembic_version"):
        return False
    stored = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return stored == [head_revision()]


def upgrade_to_head(connection: Connection) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    # ConfigParser interpolates '%', which a checkout path may contain.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def in_memory(database: str) -> bool:
    return database == ":memory:" or database.startswith("file:")
