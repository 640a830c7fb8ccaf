"""The tasks' part of the app: the task backend chosen from the settings, so the lifespan
wires the same roles either way, with the run registry, the shared run logs and the
webhooks over it.

The Redis roles are imported only when `REDIS_URL` is set: a single instance
never loads the client.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.config import Settings
from app.core.drain import Drain
from app.store.factory import Stores
from app.tasks.base import Claims, Tasks
from app.tasks.in_process import in_process_tasks
from app.tasks.log import LocalRunLogs, SharedRunLogs
from app.tasks.redis.target import RedisTarget
from app.tasks.runs import RunRegistry
from app.tasks.unstored import NoUnstoredTurns, UnstoredSweeper, UnstoredTurns
from app.tasks.webhooks import Webhooks

if TYPE_CHECKING:
    from app.tasks.redis.log import StoredStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class Runs:
    """What runs turns on this instance, and what it shares with the others (Redis)."""

    tasks: Tasks
    """The backend's roles as the app calls them (each call a span while tracing is on)."""
    runs: RunRegistry
    logs: SharedRunLogs
    unstored: UnstoredTurns
    webhooks: Webhooks
    drain: Drain
    """Set at SIGTERM: this instance takes no new turn and hands its runs over."""
    movable: bool
    """Another instance can carry a turn on: with Redis, unless `TURN_TAKEOVERS` is 0."""


async def build(
    settings: Settings,
    *,
    stack: AsyncExitStack,
    instance_id: str,
    stores: Stores,
    traced: Callable[[Tasks], Tasks],
) -> Runs:
    """The backend started, its stop signals reaching the run registry, until `stack` closes.

    `instance_id` names this process in what it writes; `stores` keeps the turns
    a failed store left aside; `traced` wraps the roles the app calls.
    """
    sessions = stores.sessions
    unstored = build_unstored(settings)
    stack.push_async_callback(unstored.close)
    storing = UnstoredSweeper(unstored, sessions, settings.unstored_sweep_seconds)
    storing.start()
    stack.push_async_callback(storing.close)
    built = build_tasks(settings, instance_id)
    tasks = traced(built)
    logs = build_shared_logs(
        settings,
        claims=tasks.claims,
        tasks=built,
        stored=sessions.latest_status,
        instance_id=instance_id,
    )
    drain = Drain()
    movable = built.takeovers is not None and settings.turn_takeovers > 0
    runs = RunRegistry(
        tasks.claims,
        ttl=settings.task_ttl_seconds,
        retention=settings.resume_retention_seconds,
        shared=logs,
        movable=movable,
        drain=drain,
    )
    if built.takeovers is not None:
        built.takeovers.on_lost(runs.lost)
    await tasks.backend.start(runs.stop)
    stack.push_async_callback(tasks.backend.close)
    stack.push_async_callback(logs.close)
    webhooks = Webhooks(settings)
    stack.push_async_callback(webhooks.close)
    return Runs(
        tasks=tasks,
        runs=runs,
        logs=logs,
        unstored=unstored,
        webhooks=webhooks,
        drain=drain,
        movable=movable,
    )


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
    settings: Settings, *, claims: Claims, tasks: Tasks, stored: StoredStatus, instance_id: str
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
