"""Task registry: who runs which conversation, stops that reach the owning instance, run logs.

`base` holds the interface and errors; `in_process` and `redis` the two backends;
`build_task_manager` picks one from the settings. `log` is a run's event log
and the reader interface; `redis_log` copies logs where other instances can
read them, and `build_shared_logs` wires it when Redis is configured.
`redis_liveness` tells live instances from dead ones in Redis, and `sweeper`
marks a dead instance's turns `interrupted` and frees their conversations.
"""

from app.tasks.base import (
    Claim,
    EventsGone,
    StopHandler,
    TaskBackendUnavailable,
    TaskError,
    TaskManager,
)
from app.tasks.factory import build_shared_logs, build_task_manager
from app.tasks.in_process import InProcessTaskManager
from app.tasks.log import EventLogReader, LocalRunLogs, RunLog, SharedRunLogs
from app.tasks.redis import RedisTaskManager
from app.tasks.redis_log import RedisRunLogs

__all__ = [
    "Claim",
    "EventLogReader",
    "EventsGone",
    "InProcessTaskManager",
    "LocalRunLogs",
    "RedisRunLogs",
    "RedisTaskManager",
    "RunLog",
    "SharedRunLogs",
    "StopHandler",
    "TaskBackendUnavailable",
    "TaskError",
    "TaskManager",
    "build_shared_logs",
    "build_task_manager",
]
