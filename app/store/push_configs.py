"""A2A push notification configs, per user and task, in `a2a_push_config`.

Set on any instance, read by the one that runs the task when it ends
(`app/api/a2a/push.py`). A user reaches only their own rows: another user's
task has no configs, as it has no turns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.db import Database
from app.store.models import A2A_PUSH_CONFIG as PUSH_CONFIGS


@dataclass(frozen=True, slots=True)
class PushConfig:
    task_id: str
    config_id: str
    url: str
    token: str | None = None
    """Sent back as `X-A2A-Notification-Token`."""
    auth_scheme: str | None = None
    auth_credentials: str | None = None
    """With the scheme, sent as `Authorization: <scheme> <credentials>`."""


def task_id_of(conversation_id: str, row_id: int) -> str:
    """The A2A task a turn begins: `<conversationId>.<rowId>`."""
    return f"{conversation_id}.{row_id}"


async def delete_push_configs(conn: AsyncConnection, user_id: str, conversation_id: str) -> None:
    """In the caller's transaction: the conversation's turns go, so do its tasks' configs."""
    await conn.execute(
        delete(PUSH_CONFIGS).where(
            PUSH_CONFIGS.c.user_id == user_id, PUSH_CONFIGS.c.conversation_id == conversation_id
        )
    )


async def delete_turns_push_configs(
    conn: AsyncConnection, user_id: str, conversation_id: str, row_ids: Iterable[int]
) -> None:
    """In the caller's transaction: these turns go, so do the configs of the tasks they began.

    Kept, they would outlive what the user deleted, and on SQLite, which gives the
    newest row's id again once that row is deleted, tell the next turn's task to a
    client that set them on the deleted one.
    """
    task_ids = [task_id_of(conversation_id, row_id) for row_id in row_ids]
    if task_ids:
        await conn.execute(
            delete(PUSH_CONFIGS).where(
                PUSH_CONFIGS.c.user_id == user_id, PUSH_CONFIGS.c.task_id.in_(task_ids)
            )
        )


class SqlPushConfigs:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def put(self, user_id: str, conversation_id: str, config: PushConfig) -> None:
        """Store the config; one with the same task and id is replaced."""
        values = {
            "user_id": user_id,
            "conversation_id": conversation_id,
            "task_id": config.task_id,
            "config_id": config.config_id,
            "url": config.url,
            "token": config.token,
            "auth_scheme": config.auth_scheme,
            "auth_credentials": config.auth_credentials,
            "create_time": datetime.now(UTC),
        }
        stmt = self._db.upsert(PUSH_CONFIGS).values(**values)
        stmt = stmt.on_conflict_do_update(
            index_elements=[
                PUSH_CONFIGS.c.user_id,
                PUSH_CONFIGS.c.task_id,
                PUSH_CONFIGS.c.config_id,
            ],
            set_={
                name: getattr(stmt.excluded, name)
                for name in ("url", "token", "auth_scheme", "auth_credentials")
            },
        )
        async with self._db.statement() as conn:
            await conn.execute(stmt)

    async def of_task(self, user_id: str, task_id: str) -> list[PushConfig]:
        """The task's configs, oldest first."""
        stmt = (
            select(PUSH_CONFIGS)
            .where(PUSH_CONFIGS.c.user_id == user_id, PUSH_CONFIGS.c.task_id == task_id)
            .order_by(PUSH_CONFIGS.c.create_time, PUSH_CONFIGS.c.config_id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).all()
        return [
            PushConfig(
                row.task_id,
                row.config_id,
                row.url,
                row.token,
                row.auth_scheme,
                row.auth_credentials,
            )
            for row in rows
        ]

    async def delete(self, user_id: str, task_id: str, config_id: str) -> bool:
        stmt = delete(PUSH_CONFIGS).where(
            PUSH_CONFIGS.c.user_id == user_id,
            PUSH_CONFIGS.c.task_id == task_id,
            PUSH_CONFIGS.c.config_id == config_id,
        )
        async with self._db.statement() as conn:
            return bool((await conn.execute(stmt)).rowcount)
