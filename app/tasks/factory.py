"""Choose the task backend from the settings, so `main.py` wires the same roles either way.

The Redis roles are imported only when `REDIS_URL` is set: a single instance
never loads the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.config import Settings
from app.tasks.base import Claims, Tasks
from app.tasks.in_process import in_process_tasks
from app.tasks.log import LocalRunLogs, SharedRunLogs
from app.tasks.redis.target import RedisTarget
from app.tasks.unstored import NoUnstoredTurns, UnstoredTurns

if TYPE_CHECKING:
    from app.tasks.redis.log import StoredStatus


def build_tasks(settings: Settings, instance_id: str) -> Tasks:
    """In-process without `REDIS_URL` (one instance only); Redis when several instances share work.

    `instance_id` names this process in the claims it writes, so an operator
    reading Redis can tell which instance runs a conversation.
    """
    if not settings.redis_url:
        return in_process_tasks()
    from app.tasks.redis.backend import redis_tasks

    return redis_tasks(
        RedisTarget.from_settings(settings),
        settings.redis_prefix,
        instance_id,
        dead_after=settings.instance_dead_seconds,
    )


def build_shared_logs(
    settings: Settings, claims: Claims, tasks: Tasks, stored: StoredStatus, instance_id: str
) -> SharedRunLogs:
    """Redis Streams with `REDIS_URL`; without it only the in-process logs exist (one instance).

    `claims` is what the app calls (tracing may wrap it), `tasks` the roles
    `build_tasks` made: a run's last copy releases its claim through them.
    `stored` tells a resume how a turn whose end marker is missing is stored;
    `instance_id` is this instance, whose claim each copy checks it still holds.
    """
    if not settings.redis_url:
        return LocalRunLogs()
    from app.tasks.redis.log import RedisRunLogs

    return RedisRunLogs(
        RedisTarget.from_settings(settings),
        settings.redis_prefix,
        claims,
        instance_id=instance_id,
        releaser=tasks.batch_release,
        ttl=settings.task_ttl_seconds,
        retention=settings.resume_retention_seconds,
        max_events=settings.resume_max_events,
        max_idle=settings.sse_ping_seconds,
        stored=stored,
    )


def build_unstored(settings: Settings) -> UnstoredTurns:
    """In Redis, where another instance finds them; one instance alone keeps nothing aside."""
    if not settings.redis_url:
        return NoUnstoredTurns()
    from app.tasks.redis.unstored import RedisUnstoredTurns

    return RedisUnstoredTurns(RedisTarget.from_settings(settings), settings.redis_prefix)
