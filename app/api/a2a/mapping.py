"""Our turns as A2A tasks: task ids, states, and our events as A2A updates.

A task is a turn: its id names the conversation and the stored row that
began it (`<conversationId>.<rowId>`), so any instance can find it in
`ai_session` without a table of its own, and another user's id finds
nothing. A turn that paused to ask (deep research) and the turn answering
it are one task, as A2A's input-required state has it: the task goes on
through every row that follows a paused one.

Our events map as: `text` -> the `answer` artifact (appended chunk by
chunk); `reference` -> a `references` artifact (a data part); `file` -> a
file artifact (a URL part with our download URL); `recommend` -> a
`follow-ups` artifact; thinking, tool calls, plan steps and retry notices
-> working-state status messages; `complete` -> the final state. Left out:
`start` (the task itself says it) and `deck` (a page's preview).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, assert_never

from a2a.helpers.proto_helpers import (
    new_data_part,
    new_text_message,
    new_text_part,
    new_url_part,
)
from a2a.server.events.event_queue import Event as A2AEvent
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types.a2a_pb2 import (
    Artifact,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from app.core import events as ev
from app.core.frames import joined_deltas
from app.core.urls import absolute
from app.llm.errors import stored_error_message
from app.service.a2a import task_id_of

if TYPE_CHECKING:
    from app.store.models import StoredTurn

TASK_ID = re.compile(r"(?P<conversation>[A-Za-z0-9_-]{1,128})\.(?P<row>[0-9]{1,18})")

STATES: dict[str, TaskState] = {
    "running": TaskState.TASK_STATE_WORKING,
    "paused": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "stopped": TaskState.TASK_STATE_CANCELED,
    "failed": TaskState.TASK_STATE_FAILED,
    "interrupted": TaskState.TASK_STATE_FAILED,
}
"""Our turn statuses (and `complete` statuses) as A2A task states."""

ANSWER, REFERENCES, FOLLOW_UPS = "answer", "references", "follow-ups"


def row_id(turn: StoredTurn) -> int:
    """A stored turn's row id: the store only hands back rows it has read, which have one."""
    if turn.id is None:
        raise ValueError("a turn read from the store has no row id")
    return turn.id


@dataclass(frozen=True, slots=True)
class TaskRef:
    conversation_id: str
    row_id: int

    @property
    def task_id(self) -> str:
        return task_id_of(self.conversation_id, self.row_id)


def parse_task_id(task_id: str) -> TaskRef | None:
    """The turn a task id names; None for an id we never gave out."""
    match = TASK_ID.fullmatch(task_id)
    if match is None:
        return None
    return TaskRef(match["conversation"], int(match["row"]))


def task_turns(turns: Sequence[StoredTurn], row_id: int) -> list[StoredTurn]:
    """The rows of the task begun by `row_id`: it, and each row answering a paused one.

    An answer is a turn that follows the paused one (its child in the conversation's tree,
    the newest if it was answered on more than one branch), not merely the next row. `turns`
    are oldest first, as the store reads them.
    """
    rows = [turn for turn in turns if turn.id == row_id]
    while rows and rows[-1].status == "paused":
        answers = [turn for turn in turns if turn.parent_id == rows[-1].id]
        if not answers:
            break
        rows.append(answers[-1])
    return rows


def user_message(text: str, ref: TaskRef) -> Message:
    return new_text_message(
        text, context_id=ref.conversation_id, task_id=ref.task_id, role=Role.ROLE_USER
    )


def agent_message(text: str, ref: TaskRef, data: dict[str, Any] | None = None) -> Message:
    message = new_text_message(text, context_id=ref.conversation_id, task_id=ref.task_id)
    if data is not None:
        message.parts.append(new_data_part(data))
    return message


def stored_task(rows: Sequence[StoredTurn], ref: TaskRef, base_url: str) -> Task:
    """The task as the database has it: state of its latest row, artifacts of that row.

    Earlier rows (a question asked, its answer given) are the task's history.
    """
    last = rows[-1]
    task = Task(id=ref.task_id, context_id=ref.conversation_id)
    for row in rows[:-1]:
        task.history.append(user_message(row.question, ref))
        task.history.append(agent_message(row.answer or "", ref))
    task.history.append(user_message(last.question, ref))
    state = STATES[last.status]
    status = TaskStatus(state=state)
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        status.message.CopyFrom(agent_message(last.answer or "", ref))
    elif last.error:
        said = stored_error_message(last.error, last.error_message) or last.error
        status.message.CopyFrom(agent_message(said, ref, {"code": last.error}))
    task.status.CopyFrom(status)
    if last.answer and state != TaskState.TASK_STATE_INPUT_REQUIRED:
        task.artifacts.append(
            Artifact(artifact_id=ANSWER, name=ANSWER, parts=[new_text_part(last.answer)])
        )
    if last.reference:
        task.artifacts.append(_references(last.reference, base_url))
    for file in last.files:
        if file.status == "failed":
            continue  # A file that was not made has no bytes to point at.
        task.artifacts.append(
            _file(file.file_id, file.name, absolute(file.url, base_url), file.mime_type)
        )
    if last.recommend:
        task.artifacts.append(_follow_ups(last.recommend))
    return task


def _references(items: Iterable[dict[str, str]], base_url: str) -> Artifact:
    """A document's passages are cited by relative download URLs: whole, like files' URLs."""
    whole = [{**item, "url": absolute(str(item.get("url", "")), base_url)} for item in items]
    return Artifact(
        artifact_id=REFERENCES,
        name=REFERENCES,
        description="Sources the answer used: url, title, content",
        parts=[new_data_part(whole)],
    )


def _follow_ups(questions: list[str]) -> Artifact:
    return Artifact(
        artifact_id=FOLLOW_UPS,
        name=FOLLOW_UPS,
        description="Suggested follow-up questions",
        parts=[new_data_part(questions)],
    )


def _file(file_id: str, name: str, url: str, mime_type: str) -> Artifact:
    return Artifact(
        artifact_id=f"file-{file_id}",
        name=name,
        parts=[new_url_part(url, media_type=mime_type, filename=name)],
    )


@dataclass(slots=True)
class TaskUpdates:
    """Our events as one task's A2A updates.

    It also keeps the task as the updates so far make it, for a subscriber
    that joins late: replay the log into it, send `task`, then follow.
    """

    ref: TaskRef
    base_url: str
    task: Task = field(init=False)
    ended: bool = False
    """A final state was sent: completed, canceled, failed, or input-required."""
    _answer: list[str] = field(default_factory=list)
    _error: ev.ErrorEvent | None = None
    _approval: ev.ApprovalEvent | None = None

    def __post_init__(self) -> None:
        self.task = Task(
            id=self.ref.task_id,
            context_id=self.ref.conversation_id,
            status=TaskStatus(state=TaskState.TASK_STATE_WORKING),
        )

    def translate(self, events: Sequence[ev.Event]) -> list[A2AEvent]:
        """A batch of our events as updates; runs of text or thinking deltas become one."""
        out: list[A2AEvent] = []
        for event in _coalesced(events):
            update = self._update(event)
            if update is None:
                continue
            if isinstance(update, TaskArtifactUpdateEvent):
                append_artifact_to_task(self.task, update)
            elif isinstance(update, TaskStatusUpdateEvent):
                self.task.status.CopyFrom(update.status)
            out.append(update)
        return out

    def _update(self, event: ev.Event) -> TaskArtifactUpdateEvent | TaskStatusUpdateEvent | None:
        match event:
            case ev.TextEvent():
                first = not self._answer
                self._answer.append(event.content)
                answer = Artifact(
                    artifact_id=ANSWER, name=ANSWER, parts=[new_text_part(event.content)]
                )
                return self._artifact(answer, append=not first)
            case ev.ReferenceEvent():
                items = [r.wire() for r in event.references()]
                return self._artifact(_references(items, self.base_url))
            case ev.RecommendEvent():
                return self._artifact(_follow_ups(event.questions()))
            case ev.FileEvent() if event.status is None:
                url = absolute(event.url, self.base_url)
                return self._artifact(_file(event.file_id, event.name, url, event.mime_type))
            case ev.CompleteEvent():
                return self._final(event.status)
            case ev.ErrorEvent() if event.code != "RETRYING":
                self._error = event
                return None
            case ev.ApprovalEvent():
                self._approval = event
                return None
        text = _progress_text(event)
        if text is None:
            return None
        message = agent_message(text, self.ref, event.wire())
        return self._status(TaskState.TASK_STATE_WORKING, message)

    def _final(self, status: str) -> TaskStatusUpdateEvent:
        self.ended = True
        state = STATES[status]
        if state == TaskState.TASK_STATE_INPUT_REQUIRED and self._approval is not None:
            # What waits for the user's yes, as a data part the client answers with a decision.
            approval = self._approval
            text = f"Approve {approval.tool_name or 'the research plan'}?"
            return self._status(state, agent_message(text, self.ref, approval.wire()))
        if state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # The answer of a paused turn is the question put to the user.
            return self._status(state, agent_message("".join(self._answer), self.ref))
        if self._error is not None:
            message = agent_message(self._error.message, self.ref, self._error.wire())
            return self._status(state, message)
        return self._status(state, None)

    def _artifact(self, artifact: Artifact, *, append: bool = False) -> TaskArtifactUpdateEvent:
        return TaskArtifactUpdateEvent(
            task_id=self.ref.task_id,
            context_id=self.ref.conversation_id,
            artifact=artifact,
            append=append,
        )

    def _status(self, state: TaskState, message: Message | None) -> TaskStatusUpdateEvent:
        status = TaskStatus(state=state)
        if message is not None:
            status.message.CopyFrom(message)
        return TaskStatusUpdateEvent(
            task_id=self.ref.task_id, context_id=self.ref.conversation_id, status=status
        )


def _progress_text(event: ev.Event) -> str | None:
    """What a working-state message says of one of our progress events; None: nothing."""
    match event:
        case ev.ThinkingEvent():
            return event.content
        case ev.ToolStartEvent():
            return f"Calling {event.tool_name}"
        case ev.ToolEndEvent():
            return f"{event.tool_name} {'failed' if event.is_error else 'done'}"
        case ev.ErrorEvent():
            return event.message
        case ev.PlanEvent():
            return f"Plan: {len(event.tasks)} tasks"
        case ev.StepEvent():
            return f"Task {event.task_id} {event.status}"
        case ev.CritiqueEvent():
            return "Critique: passed" if event.passed else "Critique: more research needed"
        case ev.FileEvent() if event.status == "failed":
            return f"{event.name}: {event.error}"
        case (
            ev.StartEvent()
            | ev.ApprovalEvent()
            | ev.QueuedEvent()
            | ev.TextEvent()
            | ev.ReferenceEvent()
            | ev.RecommendEvent()
            | ev.FileEvent()
            | ev.DeckEvent()
            | ev.CompleteEvent()
        ):
            return None
        case _:
            assert_never(event)


def _coalesced(events: Sequence[ev.Event]) -> list[ev.Event]:
    """Consecutive text (or thinking) deltas joined: one update per batch, not per token."""
    out: list[ev.Event] = []
    for event in events:
        joined = joined_deltas(out[-1], event) if out else None
        if joined is not None:
            out[-1] = joined
        else:
            out.append(event)
    return out
