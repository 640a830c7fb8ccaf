"""Task registry: who runs which conversation, and stops that reach the owning instance.

`base` holds the interface and errors; `memory` and `redis` the two backends;
`build_task_manager` picks one from the settings.
"""

from app.tasks.base import (
    Claim,
    StopHandler,
    TaskBackendUnavailable,
    TaskError,
    TaskManager,
)
from app.tasks.factory import build_task_manager
from app.tasks.memory import InProcessTaskManager
from app.tasks.redis import RedisTaskManager

__all__ = [
    "Claim",
    "InProcessTaskManager",
    "RedisTaskManager",
    "StopHandler",
    "TaskBackendUnavailable",
    "TaskError",
    "TaskManager",
    "build_task_manager",
]
