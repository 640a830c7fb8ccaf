"""Task registry: who runs which conversation, stops that reach the owning instance, run logs.

`base` holds the roles' interfaces (claims, the conversation queue, the list
of runs) and errors; `in_process` and `redis` build the two backends' roles;
`build_tasks` picks one from the settings (importing the Redis package only
then). `log` is a run's event log and the reader interface; `redis.log`
copies logs where other instances can read them, and `build_shared_logs`
wires it when Redis is configured. `factory.build` makes the tasks' part of
the app from the settings: the backend, the run registry over it, the logs.
`redis.liveness` tells live instances from dead ones in Redis, and `sweeper`
marks a dead instance's turns `interrupted` and frees their conversations.
"""

from app.tasks.base import (
    Claim,
    Claims,
    ConversationQueue,
    EventsGone,
    RunsBoard,
    StopHandler,
    TaskBackend,
    TaskBackendUnavailable,
    TaskError,
    Tasks,
)
from app.tasks.factory import build_shared_logs, build_tasks
from app.tasks.in_process import in_process_tasks
from app.tasks.log import EventLogReader, LocalRunLogs, RunLog, SharedRunLogs

__all__ = [
    "Claim",
    "Claims",
    "ConversationQueue",
    "EventLogReader",
    "EventsGone",
    "LocalRunLogs",
    "RunLog",
    "RunsBoard",
    "SharedRunLogs",
    "StopHandler",
    "TaskBackend",
    "TaskBackendUnavailable",
    "TaskError",
    "Tasks",
    "build_shared_logs",
    "build_tasks",
    "in_process_tasks",
]
