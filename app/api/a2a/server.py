"""The A2A request handler: A2A calls answered by our runs, wherever they run.

The SDK's `DefaultRequestHandler` keeps tasks and their event queues in the
memory of the instance that runs them (or in its own task tables), so a
cancel or a subscribe that reaches another instance finds nothing. Ours
keeps no state of its own: a message starts a turn through `StreamService.open`,
the path every stream takes (validation, limits, the claim, the stored
question); a task is read back from `ai_session`; a cancel is our stop,
delivered by the claims (`app/tasks`) to whichever instance runs it; a subscribe
reads the run's event log, from Redis when another instance runs it. So
a task shows in `/session/*` like any turn, and one user's task is
another's "not found".

Which agent answers: the message's (or the request's) metadata `skill`
names a kind; a message continuing a task goes to that task's agent;
otherwise web search (`chat`). The metadata's `parentId` and `regenerate`
place the turn in the conversation's tree as a stream's do (API.md
"Conversations you can correct"); its `model` picks the model (API.md
"Models"). Push notification configs are `app/api/a2a/push.py`'s. Left out:
listing tasks across conversations (a context's tasks are its turns).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event as A2AEvent
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict
from pydantic import ValidationError

from app.agents.approvals import ApprovalAnswer, ApprovalMode
from app.agents.registry import AgentEntry
from app.api.a2a.mapping import (
    STATES,
    TaskRef,
    TaskUpdates,
    parse_task_id,
    row_id,
    stored_task,
    task_turns,
    user_message,
)
from app.api.a2a.push import PushNotifications
from app.api.agent import ApprovalParams
from app.api.deps import Services
from app.api.run_events import event_batches
from app.core.events import Event, StartEvent
from app.service.a2a import text_of
from app.service.errors import (
    BadRequest,
    Conflict,
    EventsGone,
    NotAvailable,
    NotFound,
    OverLimit,
    StoreError,
    TaskBackendUnavailable,
    TooLong,
    TurnRefused,
)
from app.service.streams import MemoryMode, TurnRequest

if TYPE_CHECKING:
    from app.store.models import StoredTurn
    from app.tasks.log import EventLogReader
    from app.tasks.runs import Run

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_KIND = "chat"
AFTER_START = 1
"""The log cursor past a run's first event, `start`, which the task itself stands for."""
USER_KEY = "dodo_user"
LIMIT_KEY = "dodo_limit_key"
BASE_URL_KEY = "dodo_base_url"
"""Keys of `ServerCallContext.state`, set by the routes' context builder."""


@dataclass(frozen=True, slots=True)
class Started:
    """A turn started for a message: the task it belongs to and its live events."""

    ref: TaskRef
    run: Run
    reader: EventLogReader
    stop_when_gone: Callable[[], object] | None
    earlier: list[StoredTurn]
    """The task's rows before this turn (a question asked, its answer), for its history."""


class RunTasks(RequestHandler):
    def __init__(self, services: Callable[[], Services], entries: Sequence[AgentEntry]) -> None:
        self._services = services
        self._entries = {entry.kind: entry for entry in entries}

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        """Run the turn to its end (with `returnImmediately`, only start it); answer the task."""
        started, updates = await self._begin(params, context)
        if not params.configuration.return_immediately:
            async for batch in event_batches(started.reader, AFTER_START):
                updates.translate(batch)
                if updates.ended:
                    break
        return updates.task

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[A2AEvent]:
        started, updates = await self._begin(params, context)
        snapshot = Task()
        snapshot.CopyFrom(updates.task)
        yield snapshot
        try:
            async for batch in event_batches(started.reader, AFTER_START):
                for update in updates.translate(batch):
                    yield update
                if updates.ended:
                    return
        finally:
            if not updates.ended and started.stop_when_gone is not None:
                started.stop_when_gone()

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        ref, rows = await self._task(params.id, context)
        return stored_task(rows, ref, _base_url(context))

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        """Our stop, from any instance: the claims reach the one that runs it."""
        ref, rows = await self._task(params.id, context)
        if rows[-1].status != "running":
            raise TaskNotCancelableError(f"The task is {rows[-1].status}")
        user, services = _user(context), self._services()
        try:
            await services.turns.stop_run(user, ref.conversation_id)
        except TaskBackendUnavailable as exc:
            raise InternalError("The task backend (Redis) is down") from exc
        ref, rows = await self._task(params.id, context)
        return stored_task(rows, ref, _base_url(context))

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[A2AEvent]:
        """The task as it stands, then its live updates: our resume, on any instance.

        The run's log is replayed from its first event into the task sent
        first, so nothing is sent twice and nothing is missed. A task that
        has ended is sent as stored, and the stream ends.
        """
        ref, rows = await self._task(params.id, context)
        base_url = _base_url(context)
        if STATES[rows[-1].status] != TaskState.TASK_STATE_WORKING:
            yield stored_task(rows, ref, base_url)
            return
        services, user = self._services(), _user(context)
        try:
            reader = await services.runs.reader(user, ref.conversation_id, 0)
        except (TaskBackendUnavailable, EventsGone) as exc:
            raise InternalError(f"Cannot follow the task: {exc}") from exc
        if reader is None:
            yield stored_task(rows, ref, base_url)
            return
        updates = TaskUpdates(ref, base_url)
        _add_history(updates.task, rows, ref)
        batches = event_batches(reader, 0)
        async with contextlib.aclosing(batches):
            replayed = await _replay(batches, updates, row_id(rows[-1]))
            yield replayed
            if updates.ended:
                return
            async for batch in batches:
                for update in updates.translate(batch):
                    yield update
                if updates.ended:
                    return

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """A context's tasks: the conversation's turns, a paused one and its answer as one task."""
        if not params.context_id:
            raise UnsupportedOperationError("List tasks by contextId (a conversation)")
        turns = await self._turns(_user(context), params.context_id)
        tasks: list[Task] = []
        answered: set[int] = set()
        for turn in turns:
            if row_id(turn) in answered:
                continue
            ref = TaskRef(params.context_id, row_id(turn))
            rows = task_turns(turns, ref.row_id)
            answered.update(row_id(r) for r in rows)
            tasks.append(stored_task(rows, ref, _base_url(context)))
        return ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Set a config on the caller's task (a config with the same id is replaced)."""
        push = self._push()
        await push.checked(params)
        ref, _ = await self._task(params.task_id, context)
        return await _stored(push.put(_user(context), ref, params))

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        for config in await self._push_configs(params.task_id, context):
            if config.id == params.id:
                return config
        raise TaskNotFoundError("No such push notification config on the task")

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        configs = await self._push_configs(params.task_id, context)
        return ListTaskPushNotificationConfigsResponse(configs=configs)

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        push = self._push()
        if not push.enabled:
            raise PushNotificationNotSupportedError
        ref, _ = await self._task(params.task_id, context)
        if not await _stored(push.delete(_user(context), ref, params.id)):
            raise TaskNotFoundError("No such push notification config on the task")

    async def _push_configs(
        self, task_id: str, context: ServerCallContext
    ) -> list[TaskPushNotificationConfig]:
        push = self._push()
        if not push.enabled:
            raise PushNotificationNotSupportedError
        ref, _ = await self._task(task_id, context)
        return await _stored(push.of_task(_user(context), ref))

    def _push(self) -> PushNotifications:
        services = self._services()
        return PushNotifications(services.push_configs, services.webhooks, services.store)

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError

    async def _begin(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> tuple[Started, TaskUpdates]:
        """Start the message's turn; the task as it stands before the run's first update."""
        push = self._push()
        wanted = params.configuration.task_push_notification_config
        asks_push = params.configuration.HasField("task_push_notification_config")
        if asks_push:
            await push.checked(wanted)
        started = await self._start(params.message, _metadata(params), context)
        if asks_push:
            await _stored(push.put(_user(context), started.ref, wanted))
        push.watch(started.run, _user(context), started.ref, _base_url(context))
        updates = TaskUpdates(started.ref, _base_url(context))
        _add_history(updates.task, started.earlier, started.ref)
        updates.task.history.append(user_message(text_of(params.message.parts), started.ref))
        return started, updates

    async def _start(
        self, message: Message, metadata: dict[str, Any], context: ServerCallContext
    ) -> Started:
        user, services = _user(context), self._services()
        question = text_of(message.parts)
        decision = _decision(message, metadata)
        if not question.strip() and metadata.get("regenerate") is None and decision is None:
            raise InvalidParamsError("The message must have a text part")
        earlier: list[StoredTurn] = []
        project_id = str(metadata["projectId"]) if metadata.get("projectId") else None
        kind = str(metadata.get("skill") or await self._project_kind(user, project_id))
        conversation = message.context_id or None
        task_ref: TaskRef | None = None
        if message.task_id:
            task_ref, earlier = await self._task(message.task_id, context)
            if STATES[earlier[-1].status] != TaskState.TASK_STATE_INPUT_REQUIRED:
                raise UnsupportedOperationError(
                    f"The task is {earlier[-1].status}: only one waiting for input takes a message"
                )
            if conversation not in (None, task_ref.conversation_id):
                raise InvalidParamsError("contextId is not the task's context")
            conversation = task_ref.conversation_id
            kind = str(metadata.get("skill") or earlier[0].agent_type)
        answer = _answer(decision, earlier[-1] if earlier else None)
        entry = self._entries.get(kind)
        if entry is None:
            raise InvalidParamsError(f"Unknown skill {kind!r}")
        file_id = metadata.get("fileId")
        parent_id = _turn_field(metadata, "parentId")
        if parent_id is None and earlier:
            # A task's answer follows the row waiting for it, wherever the active path is.
            parent_id = earlier[-1].id
        request = TurnRequest(
            question,
            conversation,
            str(file_id) if file_id else None,
            parent_id=parent_id,
            regenerate=_turn_field(metadata, "regenerate"),
            model=str(metadata["model"]) if metadata.get("model") else None,
            approval=answer,
            review_plan=metadata.get("reviewPlan") is True,
            template_file_id=str(metadata["templateFileId"])
            if metadata.get("templateFileId")
            else None,
            tool_approval=_approval_mode(metadata.get("toolApproval")),
            project_id=project_id,
            memory=_memory_mode(metadata.get("memory")),
        )
        try:
            run, stop_when_gone = await services.streams.open(
                entry, request, user, context.state.get(LIMIT_KEY)
            )
        except TurnRefused as exc:
            raise _a2a_error(exc) from exc
        start = await _start_event(run.log)
        row = TaskRef(start.conversation_id, start.row_id)
        return Started(
            ref=task_ref or row,
            run=run,
            reader=run.log,
            stop_when_gone=stop_when_gone,
            earlier=earlier,
        )

    async def _project_kind(self, user: str, project_id: str | None) -> str:
        """The kind of a message with no `skill`: its project's `defaultKind`, else chat."""
        if project_id is None:
            return DEFAULT_KIND
        try:
            project = await self._services().projects.project(user, project_id)
        except TurnRefused as exc:
            raise _a2a_error(exc) from exc
        return project.default_kind or DEFAULT_KIND

    async def _task(
        self, task_id: str, context: ServerCallContext
    ) -> tuple[TaskRef, list[StoredTurn]]:
        """The caller's task and its rows; `TaskNotFoundError` for an unknown or another's."""
        ref = parse_task_id(task_id)
        if ref is None:
            raise TaskNotFoundError
        rows = task_turns(await self._turns(_user(context), ref.conversation_id), ref.row_id)
        if not rows:
            raise TaskNotFoundError
        return ref, rows

    async def _turns(self, user: str, conversation_id: str) -> list[StoredTurn]:
        try:
            return await self._services().store.get_conversation(user, conversation_id)
        except StoreError as exc:
            raise InternalError("The database is unavailable") from exc


async def _stored(operation: Awaitable[T]) -> T:
    """A push config read or written: the database down is A2A's internal error."""
    try:
        return await operation
    except StoreError as exc:
        raise InternalError("The database is unavailable") from exc


def _user(context: ServerCallContext) -> str:
    user: str = context.state[USER_KEY]
    return user


def _base_url(context: ServerCallContext) -> str:
    base: str = context.state[BASE_URL_KEY]
    return base


def _memory_mode(value: object) -> MemoryMode | None:
    if value is None:
        return None
    if value not in ("on", "off"):
        raise InvalidParamsError("metadata.memory must be on or off")
    return "off" if value == "off" else "on"


def _approval_mode(value: object) -> ApprovalMode | None:
    if value is None:
        return None
    if value not in ("ask", "auto"):
        raise InvalidParamsError("toolApproval must be `ask` or `auto`")
    return "ask" if value == "ask" else "auto"


def _decision(message: Message, metadata: dict[str, Any]) -> dict[str, Any] | None:
    """A decision on an approval: the message's data part with a `decision`, or the
    metadata's `approval` object."""
    for part in message.parts:
        if part.HasField("data"):
            data = MessageToDict(part).get("data")
            if isinstance(data, dict) and "decision" in data:
                return data
    approval = metadata.get("approval")
    return approval if isinstance(approval, dict) else None


def _answer(decision: dict[str, Any] | None, last: StoredTurn | None) -> ApprovalAnswer | None:
    """The decision on the task's pending approval (its id may be left out); None: none."""
    if decision is None:
        return None
    pending = (last.pending[0].approval_id if last is not None and last.pending else "") or ""
    try:
        params = ApprovalParams.model_validate({"approvalId": pending} | decision)
    except ValidationError as exc:
        raise InvalidParamsError(f"approval: {exc.errors()[0]['msg']}") from exc
    return params.answer()


def _turn_field(metadata: dict[str, Any], name: str) -> int | str | None:
    """A turn id from the metadata; a JSON number arrives as a float (protobuf's Struct)."""
    value = metadata.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return str(value)


def _metadata(params: SendMessageRequest) -> dict[str, Any]:
    """The request's metadata, with the message's own on top."""
    merged: dict[str, Any] = MessageToDict(params.metadata) if params.HasField("metadata") else {}
    if params.message.HasField("metadata"):
        merged.update(MessageToDict(params.message.metadata))
    return merged


def _add_history(task: Task, rows: Sequence[StoredTurn], ref: TaskRef) -> None:
    """Earlier rows of the task: each question put to the agent, and the question it asked back."""
    done = stored_task(rows, ref, "") if rows else None
    if done is not None:
        task.history.extend(done.history)
        if done.status.HasField("message"):
            task.history.append(done.status.message)


def _a2a_error(exc: TurnRefused) -> A2AError:
    """Our refusal to start a turn as the A2A error a client can act on."""
    message = str(exc)
    if isinstance(exc, BadRequest | NotFound | TooLong):
        return InvalidParamsError(message, {"error": exc.code} if exc.code else None)
    if isinstance(exc, Conflict):
        return InvalidRequestError(message, {"status": 409})
    if isinstance(exc, OverLimit):
        return InvalidRequestError(message, {"status": 429})
    if isinstance(exc, NotAvailable):
        return UnsupportedOperationError(message)
    return InternalError(message)


async def _start_event(reader: EventLogReader) -> StartEvent:
    """The run's first event, `start`: it names the stored row, and so the task."""
    async with contextlib.aclosing(event_batches(reader, 0)) as batches:
        first = await anext(batches, None)
    if not first or not isinstance(first[0], StartEvent):
        raise InternalError("The run ended before it started")
    return first[0]


async def _replay(batches: AsyncIterator[list[Event]], updates: TaskUpdates, row_id: int) -> Task:
    """Read what the log already holds into the task (the first batch at least)."""
    first: list[Event] = await anext(batches, [])
    if first and isinstance(first[0], StartEvent) and first[0].row_id != row_id:
        raise TaskNotFoundError("The task's run is no longer kept")
    updates.translate(first)
    snapshot = Task()
    snapshot.CopyFrom(updates.task)
    return snapshot
