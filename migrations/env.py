"""Alembic's entry point, for both the app's start-up and the command line.

The app runs migrations on its own engine (app/store/db.py) and hands the
connection in `config.attributes["connection"]`; then this file only runs
them on it, inside the caller's transaction. From the command line it opens
the database from `-x url=...`, else `MIGRATE_DATABASE_URL` (the database's
own address where `DATABASE_URL` is a transaction pooler's), else
`DATABASE_URL`, through the same `Database` the app uses, so SQLite gets its
pragmas and its folder.
"""

from __future__ import annotations

import asyncio
from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection
from sqlmodel import SQLModel

# Each registers its tables on SQLModel.metadata.
import app.store.memory_models
import app.store.models
import app.store.project_models
import app.store.schedule_models  # noqa: F401
from app.config import Settings
from app.store.db import Database

config = context.config
target_metadata = SQLModel.metadata

if config.config_file_name is not None:
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _database_url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url")
    return url or Settings().migration_url()


def _run_on(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_from_url(url: str) -> None:
    async with (
        Database.open(url, pool_size=1, migrate=False) as db,
        db.engine.connect() as connection,
    ):
        await connection.run_sync(_run_on)


def _run_offline() -> None:
    """`alembic upgrade head --sql`: print the SQL instead of running it."""
    context.configure(
        url=_database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    _run_offline()
elif (shared := config.attributes.get("connection")) is not None:
    _run_on(shared)
else:
    asyncio.run(_run_from_url(_database_url()))
