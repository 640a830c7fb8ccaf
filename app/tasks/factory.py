"""Choose the task backend from the settings, so `main.py` wires one `TaskManager` either way."""

from __future__ import annotations

from app.config import Settings
from app.tasks.base import TaskManager
from app.tasks.memory import InProcessTaskManager
from app.tasks.redis import RedisTaskManager


def build_task_manager(settings: Settings, instance_id: str) -> TaskManager:
    """In-process without `REDIS_URL` (one instance only); Redis when several instances share work.

    `instance_id` names this process in the claims it writes, so an operator
    reading Redis can tell which instance runs a conversation.
    """
    if not settings.redis_url:
        return InProcessTaskManager()
    return RedisTaskManager(settings.redis_url, settings.redis_prefix, instance_id)
