"""AG-UI: `POST /ag-ui/{kind}` for CopilotKit and every other AG-UI client.

The request is the protocol's `RunAgentInput`: `threadId` is our
conversation, the last user message is the question, `forwardedProps` carries
our own fields (`fileId`, `onDisconnect`, `model`, ...), and a `resume` entry answering the
interrupt a paused turn ended with is the user's answer to it (deep research's
plan, the PPT builder's questions). The answer is the run's log re-encoded with
the `ag-ui-protocol` package's event models and `EventEncoder`.

Each AG-UI event is sent with the id of the event of ours it came from (on
the last frame of its group), so a client that reconnects with `Last-Event-ID`
on the same `threadId` rejoins the run where it left it, on any instance,
instead of starting a new turn. Stop is our `/agent/stop`: the run ends with
`RUN_FINISHED` and a `cancelled` outcome.
"""

from __future__ import annotations

from typing import Annotated, Any, assert_never

import orjson
from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    EventType,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter, Body, Header
from pydantic import ValidationError

from app.agents.approvals import APPROVAL_PREFIX, DECISIONS
from app.api.agent import EVENT_ID, StreamParams
from app.api.auth import CallerDep
from app.api.deps import ServicesDep
from app.api.envelope import ApiError
from app.api.formats.base import TranslatedLog, agent_entry
from app.api.sse import EventStreamResponse
from app.core import events as ev

router = APIRouter(prefix="/ag-ui", tags=["ag-ui"])

FORWARDED_FIELDS = (
    "fileId",
    "onDisconnect",
    "multitaskStrategy",
    "webhook",
    "parentId",
    "regenerate",
    "model",
    "toolApproval",
    "reviewPlan",
    "templateFileId",
    "approval",
    "projectId",
    "memory",
)
"""Our own stream fields a client may pass in `forwardedProps`."""
PAUSED_REASON = "input_required"
"""The interrupt's `reason` when a turn waits for the user's answer."""
APPROVAL_REASONS = {"tool": "tool_approval", "plan": "plan_review"}
"""The interrupt's `reason` when a turn waits for the user's yes (its id: the `approvalId`)."""
Outgoing = BaseEvent | bytes
"""An AG-UI event to encode, or one already encoded (`frame`)."""


class AgUiTranslator:
    """Our events as AG-UI events, for one response; stateful, so one per reader."""

    def __init__(self, thread_id: str, run_id: str) -> None:
        self._encoder = EventEncoder()
        self._thread_id = thread_id
        self._run_id = run_id
        self._task_id = ""
        self._text: str | None = None
        """The id of the assistant text message being streamed, if one is open."""
        self._last_text: list[str] = []
        """The newest text message's pieces: a paused turn's question to the user."""
        self._reasoning: str | None = None
        self._steps: set[str] = set()
        self._state: dict[str, Any] = {}
        self._error: ev.ErrorEvent | None = None
        """An `error` held back: the run's `RUN_ERROR` if `complete` follows, else a CUSTOM."""
        self._approval: ev.ApprovalEvent | None = None
        """What the paused turn waits for, carried by the interrupt of its `RUN_FINISHED`."""

    def translate(self, event_id: int, event: ev.Event) -> bytes:
        out: list[Outgoing] = []
        if self._error is not None and not isinstance(event, ev.CompleteEvent):
            out.append(CustomEvent(name="error", value=self._error.wire()))
            self._error = None
        if isinstance(event, ev.TextEvent):
            self._close_reasoning(out)
            self._add_text(event_id, event.content, out)
        elif isinstance(event, ev.ThinkingEvent):
            self._close_text(out)
            self._add_reasoning(event_id, event.content, out)
        else:
            self._close_text(out)
            self._close_reasoning(out)
            self._other(event, out)
        return self._encode(event_id, out)

    def _add_text(self, event_id: int, content: str, out: list[Outgoing]) -> None:
        if self._text is None:
            self._text = f"{self._task_id}-{event_id}"
            self._last_text = []
            out.append(frame(EventType.TEXT_MESSAGE_START, messageId=self._text, role="assistant"))
        if content:
            self._last_text.append(content)
            out.append(frame(EventType.TEXT_MESSAGE_CONTENT, messageId=self._text, delta=content))

    def _add_reasoning(self, event_id: int, content: str, out: list[Outgoing]) -> None:
        if self._reasoning is None:
            self._reasoning = f"{self._task_id}-{event_id}"
            out.append(frame(EventType.REASONING_START, messageId=self._reasoning))
            out.append(
                frame(
                    EventType.REASONING_MESSAGE_START, messageId=self._reasoning, role="reasoning"
                )
            )
        if content:
            out.append(
                frame(EventType.REASONING_MESSAGE_CONTENT, messageId=self._reasoning, delta=content)
            )

    def _other(self, event: ev.Event, out: list[Outgoing]) -> None:
        match event:
            case ev.StartEvent():
                self._task_id = event.task_id
                out.append(
                    RunStartedEvent(
                        thread_id=self._thread_id,
                        run_id=self._run_id,
                        protocol_version=PROTOCOL_VERSION,
                        metadata={"sessionId": event.row_id, "agentType": event.agent_type},
                    )
                )
            case ev.ToolStartEvent():
                call = event.tool_call_id
                out.append(ToolCallStartEvent(tool_call_id=call, tool_call_name=event.tool_name))
                if event.arguments:
                    out.append(ToolCallArgsEvent(tool_call_id=call, delta=event.arguments))
                out.append(ToolCallEndEvent(tool_call_id=call))
            case ev.ToolEndEvent():
                call = event.tool_call_id
                out.append(
                    ToolCallResultEvent(
                        message_id=f"{call}-result",
                        tool_call_id=call,
                        content=event.result,
                        role="tool",
                    )
                )
            case ev.ReferenceEvent() | ev.RecommendEvent():
                out.append(CustomEvent(name=event.type, value=orjson.loads(event.content)))
            case ev.PlanEvent() | ev.DeckEvent():
                self._set_state(event.type, event.fields(), out)
            case ev.StepEvent():
                self._step(event, out)
            case ev.ErrorEvent():
                if event.code == "RETRYING":
                    out.append(CustomEvent(name="retrying", value=event.wire()))
                else:
                    self._error = event
            case ev.CompleteEvent():
                self._complete(event, out)
            case ev.QueuedEvent():
                # AG-UI allows nothing before RUN_STARTED: a queued run shows as one that has
                # not started yet (the stream stays open, with pings, until it does).
                return
            case ev.FileEvent() | ev.CritiqueEvent():
                out.append(CustomEvent(name=event.type, value=event.fields()))
            case ev.ApprovalEvent():
                self._approval = event
            case ev.TextEvent() | ev.ThinkingEvent():
                raise AssertionError("deltas are translated by `translate`")
            case _:
                assert_never(event)

    def _set_state(self, key: str, value: Any, out: list[Outgoing]) -> None:
        """The first shape of a key goes in a snapshot of the whole state, later ones as a delta."""
        if key in self._state:
            out.append(_replace(f"/{key}", value))
        else:
            out.append(StateSnapshotEvent(snapshot={**self._state, key: value}))
        self._state[key] = value

    def _step(self, event: ev.StepEvent, out: list[Outgoing]) -> None:
        name, status = event.task_id, event.status
        if name not in self._steps:
            self._steps.add(name)
            out.append(StepStartedEvent(step_name=name))
        if status in ("completed", "failed"):
            self._steps.discard(name)
            out.append(StepFinishedEvent(step_name=name))
        tasks = self._state.get("plan", {}).get("tasks", [])
        for index, task in enumerate(tasks):
            if task.get("id") == name:
                task["status"] = status
                out.append(_replace(f"/plan/tasks/{index}/status", status))

    def _complete(self, event: ev.CompleteEvent, out: list[Outgoing]) -> None:
        out.extend(StepFinishedEvent(step_name=name) for name in sorted(self._steps))
        self._steps.clear()
        status, error = event.status, self._error
        self._error = None
        if status in ("failed", "interrupted"):
            message = error.message if error else f"The run ended {status}"
            code = error.code if error else status.upper()
            out.append(RunErrorEvent(message=message, code=code))
            return
        if error is not None:
            out.append(CustomEvent(name="error", value=error.wire()))
        finished = RunFinishedEvent(
            thread_id=self._thread_id,
            run_id=self._run_id,
            result=event.fields(),
            usage=[
                TokenUsage(
                    input_tokens=event.usage.prompt_tokens,
                    output_tokens=event.usage.completion_tokens,
                )
            ],
        )
        if status == "paused" and self._approval is not None:
            approval = self._approval
            finished.outcome = RunFinishedInterruptOutcome(
                interrupts=[
                    Interrupt(
                        id=approval.approval_id,
                        reason=APPROVAL_REASONS[approval.kind],
                        tool_call_id=approval.tool_call_id,
                        metadata=approval.fields(),
                    )
                ]
            )
        elif status == "paused":
            finished.outcome = RunFinishedInterruptOutcome(
                interrupts=[
                    Interrupt(
                        id=self._task_id,
                        reason=PAUSED_REASON,
                        message="".join(self._last_text) or None,
                    )
                ]
            )
        elif status == "stopped":
            finished.outcome = RunFinishedCancelledOutcome()
        else:
            finished.outcome = RunFinishedSuccessOutcome()
        out.append(finished)

    def _close_text(self, out: list[Outgoing]) -> None:
        if self._text is not None:
            out.append(frame(EventType.TEXT_MESSAGE_END, messageId=self._text))
            self._text = None

    def _close_reasoning(self, out: list[Outgoing]) -> None:
        if self._reasoning is not None:
            out.append(frame(EventType.REASONING_MESSAGE_END, messageId=self._reasoning))
            out.append(frame(EventType.REASONING_END, messageId=self._reasoning))
            self._reasoning = None

    def _encode(self, event_id: int, events: list[Outgoing]) -> bytes:
        if not events:
            return b""
        frames = [e if isinstance(e, bytes) else self._encoder.encode(e).encode() for e in events]
        frames[-1] = b"id: %d\n%s" % (event_id, frames[-1])
        return b"".join(frames)


def frame(kind: EventType, **fields: str) -> bytes:
    """The package's encoding of an event whose fields are all strings, written directly.

    Used for the text and reasoning messages' events, which are most of a turn's:
    the package's models serialize through a Python-level serializer (it drops unset
    optional fields) at about ten times the cost of this, which put the format over
    its CPU budget (bench/README.md). Fields go in the models' order;
    tests/unit/test_ag_ui_encoding.py holds the two encodings equal.
    """
    return b"data: %s\n\n" % orjson.dumps({"type": kind.value, **fields})


def _replace(path: str, value: Any) -> StateDeltaEvent:
    # The package exports no JSON Patch operation models; its validator builds them.
    return StateDeltaEvent.model_validate(
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": path, "value": value}]}
    )


def question(run: RunAgentInput) -> str:
    """What the user said: the answer in a `resume` entry, else the last user message's text."""
    for entry in run.resume or ():
        if entry.interrupt_id.startswith(APPROVAL_PREFIX):
            continue
        if entry.status == "resolved" and entry.payload is not None:
            payload = entry.payload
            if isinstance(payload, dict):
                payload = payload.get("answer", payload.get("text", ""))
            return payload if isinstance(payload, str) else orjson.dumps(payload).decode()
    for message in reversed(run.messages):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                return message.content
            return "".join(getattr(part, "text", "") for part in message.content)
    return ""


def approval(run: RunAgentInput) -> dict[str, Any] | None:
    """A `resume` entry answering an approval interrupt (its id an `approvalId`), as our
    decision: `cancelled` rejects; a `resolved` payload is `{decision, arguments?,
    message?}` or `{approved: bool, reason?}` (a string: a decision's name, or a no with
    that reason); no payload approves."""
    for entry in run.resume or ():
        if not entry.interrupt_id.startswith(APPROVAL_PREFIX):
            continue
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        if isinstance(entry.payload, str):
            # A word of the user's: a decision's name, or else their reason for a no.
            word = entry.payload.strip().lower()
            payload = {"decision": word} if word in DECISIONS else {"approved": False}
            payload.setdefault("message", entry.payload if word not in DECISIONS else None)
        decision = payload.get("decision")
        if decision is None:
            approved = entry.status == "resolved" and payload.get("approved", True) is True
            decision = "approve" if approved else "reject"
        elif entry.status == "cancelled":
            decision = "reject"
        return {
            "approvalId": entry.interrupt_id,
            "decision": decision,
            "arguments": payload.get("arguments"),
            "message": payload.get("message", payload.get("reason")),
        }
    return None


def stream_params(run: RunAgentInput) -> StreamParams:
    props = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
    fields = {name: props[name] for name in FORWARDED_FIELDS if name in props}
    if (decided := approval(run)) is not None:
        fields["approval"] = decided
    try:
        return StreamParams.model_validate(
            {"query": question(run), "conversationId": run.thread_id, **fields}
        )
    except ValidationError as exc:
        raise ApiError(422, f"forwardedProps: {exc.errors()[0]['msg']}") from exc


@router.post(
    "/{kind}",
    summary="Run an agent over AG-UI (CopilotKit, @ag-ui/client)",
    response_class=EventStreamResponse,
    status_code=200,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "AG-UI events"},
        400: {"description": "Bad input (no user message, bad threadId)"},
        404: {"description": "Unknown kind or fileId; on a reconnect, no run to rejoin"},
        409: {"description": "A task is already running for this thread"},
        410: {"description": "On a reconnect, the events after Last-Event-ID are gone"},
        429: {"description": "Over a per-user limit; see Retry-After"},
        501: {"description": "This agent is not available in this version"},
        503: {"description": "A dependency is down"},
    },
)
async def run_ag_ui(
    kind: str,
    run: Annotated[RunAgentInput, Body()],
    caller: CallerDep,
    services: ServicesDep,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> EventStreamResponse:
    """Start a turn of agent `kind` from AG-UI's `RunAgentInput`, answered as AG-UI events.

    `threadId` is the conversation, the last user message the question, a
    `resume` entry's `payload` (a string, or `{answer}`) the answer to a paused
    turn; `forwardedProps` may carry our stream fields (`fileId`, `model`, `projectId`,
    `memory`, ...). With
    `Last-Event-ID` the request rejoins the thread's running (or just ended)
    run after that event instead of starting one.
    """
    entry, user = agent_entry(services, kind), caller.user
    ping = services.http.sse_ping_seconds
    if last_event_id is not None:
        if not EVENT_ID.fullmatch(last_event_id):
            raise ApiError(400, "Last-Event-ID must be a non-negative integer")
        reader = await services.streams.reader(user, run.thread_id, 0)
        if reader is None:
            raise ApiError(404, "No running or recent run on this thread")
        translator = AgUiTranslator(run.thread_id, run.run_id)
        log = TranslatedLog(reader, translator, hide_through=int(last_event_id))
        return EventStreamResponse(log, ping_seconds=ping)
    started, on_disconnect = await services.streams.open(
        entry, stream_params(run).request(), user, caller.limit_key
    )
    translator = AgUiTranslator(started.claim.conversation_id, run.run_id)
    return EventStreamResponse(
        TranslatedLog(started.log, translator), ping_seconds=ping, on_disconnect=on_disconnect
    )
