"""The store's part of the app: the database, opened on the lifespan's stack, and every
repository on it, each built once here rather than in whichever part uses it first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from app.config import Settings
from app.store.auth_keys import SqlAuthKeys
from app.store.db import Database
from app.store.file_store import SqlFileStore
from app.store.preferences import SqlPreferences
from app.store.projects import SqlProjects
from app.store.push_configs import SqlPushConfigs
from app.store.ratings import SqlRatings
from app.store.schedules import SqlSchedules
from app.store.search import SqlTurnSearch
from app.store.shares import SqlShares
from app.store.titles import SqlTitles
from app.store.turns import SqlTurnStore
from app.store.usage import SqlUsage
from app.store.user_limits import SqlUserLimits
from app.store.user_memory import SqlUserMemory

log = logging.getLogger("app")


@dataclass(frozen=True, slots=True, kw_only=True)
class Stores:
    """The database and its repositories, for the parts and routes that read or write it."""

    database: Database
    sessions: SqlTurnStore
    """The turns (`ai_session`), written as this instance (`instance_id`)."""
    titles: SqlTitles
    files: SqlFileStore
    user_memory: SqlUserMemory
    search: SqlTurnSearch
    usage: SqlUsage
    ratings: SqlRatings
    shares: SqlShares
    preferences: SqlPreferences
    projects: SqlProjects
    schedules: SqlSchedules
    push_configs: SqlPushConfigs
    auth_keys: SqlAuthKeys
    user_limits: SqlUserLimits


async def build(
    settings: Settings,
    *,
    stack: AsyncExitStack,
    instance_id: str,
    opened: Callable[[Database], None],
) -> Stores:
    """The database open (and migrated, with `AUTO_MIGRATE`) until `stack` closes.

    `opened` sees the database before any statement of this app runs on it (the
    tracing hooks in); turns a dead process left running are then marked.
    """
    # The SQLite database, the files' blobs and the tokenizers' cache live in it.
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    database = await stack.enter_async_context(
        Database.open(
            settings.database_url,
            pool_size=settings.db_pool_size,
            migrate=settings.auto_migrate,
            migrate_url=settings.migrate_database_url or None,
            transaction_pooler=settings.db_transaction_pooler,
        )
    )
    opened(database)
    sessions = SqlTurnStore(database, instance_id)
    await _mark_orphans(sessions, settings)
    return Stores(
        database=database,
        sessions=sessions,
        titles=SqlTitles(database),
        files=SqlFileStore(database),
        user_memory=SqlUserMemory(database),
        search=SqlTurnSearch(database),
        usage=SqlUsage(database),
        ratings=SqlRatings(database),
        shares=SqlShares(database, sessions),
        preferences=SqlPreferences(database),
        projects=SqlProjects(database),
        schedules=SqlSchedules(database),
        push_configs=SqlPushConfigs(database),
        auth_keys=SqlAuthKeys(database),
        user_limits=SqlUserLimits(database),
    )


async def _mark_orphans(store: SqlTurnStore, settings: Settings) -> None:
    """Turns left `running` by a dead process become `interrupted`.

    With the in-process registry this process was the only runner, so every
    running row is an orphan; with Redis, other instances may be running, and
    the sweeper (`app/tasks/sweeper.py`) marks only the turns of instances
    that are dead; here only rows stored before turns recorded their
    instance, once silent for longer than the claim TTL.
    """
    if not settings.redis_url:
        count = await store.mark_interrupted()
    else:
        older_than = datetime.now(UTC) - timedelta(seconds=settings.task_ttl_seconds)
        count = await store.mark_interrupted(older_than=older_than, unowned=True)
    if count:
        log.warning("marked %d orphaned turn(s) as interrupted", count)
