"""The AI SDK UI message stream (v1): `POST /ai-sdk/{kind}` for `useChat`.

The request is what `useChat`'s default transport (`DefaultChatTransport`)
sends: `id` is our conversation, the last user message's text parts are the
question, and fields the page adds with `body` (`fileId`, `onDisconnect`) are
ours. The answer is the run's log re-encoded as the documented UI message
stream parts, marked by the `x-vercel-ai-ui-message-stream: v1` header and
ended by `data: [DONE]`.

`GET /ai-sdk/{kind}/{id}/stream` is what `useChat({resume: true})` calls on
mount: the running turn's whole stream again, from the shared log (so from
any instance), and 204 when the conversation has nothing running. Each
group of parts carries the `id:` of our event it came from, so a transport
whose stream was cut (its instance drained or died) reconnects there with
`Last-Event-ID` and gets only what follows (docs/integrate/ai-sdk.md). Stop is our
`/agent/stop`, and the stream then ends with `abort` and `finish`: unlike the
AI SDK's reference setup, stopping and resuming work together because neither
depends on the HTTP connection.
"""

from __future__ import annotations

from typing import Annotated, Any, assert_never

import orjson
from fastapi import APIRouter, Body, Header, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.agents.approvals import DECLINED
from app.api.agent import EVENT_ID, StreamParams
from app.api.auth import CallerDep, UserDep
from app.api.deps import ServicesDep
from app.api.envelope import ApiError
from app.api.formats.base import TranslatedLog, agent_entry
from app.api.sse import EventStreamResponse
from app.core import events as ev
from app.service.streams import TURN_ID

router = APIRouter(prefix="/ai-sdk", tags=["ai-sdk"])

STREAM_HEADER = ("x-vercel-ai-ui-message-stream", "v1")
DONE = b"data: [DONE]\n\n"
FINISH_REASONS = {"completed": "stop", "paused": "other", "stopped": "other"}
"""Our `complete.status` as the AI SDK's `finishReason`; anything else is `error`."""


class UIMessagePart(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class UIMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = ""
    role: str
    parts: list[UIMessagePart] = Field(default_factory=list)


class ChatRequest(BaseModel):
    """The body `DefaultChatTransport` posts; fields added with `body` are read as ours."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str = Field(description="The chat id: our conversationId.")
    messages: list[UIMessage] = Field(
        description="The chat so far; the last user message's text parts are the question."
    )
    trigger: str | None = Field(
        default=None, description="`submit-message` or `regenerate-message`."
    )
    message_id: str | None = Field(default=None, alias="messageId")
    file_id: str | None = Field(default=None, alias="fileId")
    on_disconnect: str | None = Field(default=None, alias="onDisconnect")
    multitask_strategy: str | None = Field(default=None, alias="multitaskStrategy")
    webhook: str | None = None
    parent_id: int | str | None = Field(default=None, alias="parentId")
    model: str | None = Field(
        default=None, description="The model id to answer with (`GET /agent/models`)."
    )
    tool_approval: str | None = Field(default=None, alias="toolApproval")
    review_plan: bool | None = Field(default=None, alias="reviewPlan")
    template_file_id: str | None = Field(default=None, alias="templateFileId")
    project_id: str | None = Field(default=None, alias="projectId")
    memory: str | None = None
    approval: Any = Field(
        default=None,
        description="Our `approval` decision; else read from the last assistant message's"
        " tool part answered by `addToolApprovalResponse` (`approval-responded`).",
    )


class AiSdkTranslator:
    """Our events as UI message stream parts, for one response; stateful, so one per reader."""

    def __init__(self) -> None:
        self._task_id = ""
        self._text: str | None = None
        self._reasoning: str | None = None

    def translate(self, event_id: int, event: ev.Event) -> bytes:
        parts: list[dict[str, Any]] = []
        if isinstance(event, ev.TextEvent):
            self._close_reasoning(parts)
            if self._text is None:
                self._text = f"text-{event_id}"
                parts.append({"type": "text-start", "id": self._text})
            parts.append({"type": "text-delta", "id": self._text, "delta": event.content})
        elif isinstance(event, ev.ThinkingEvent):
            self._close_text(parts)
            if self._reasoning is None:
                self._reasoning = f"reasoning-{event_id}"
                parts.append({"type": "reasoning-start", "id": self._reasoning})
            parts.append({"type": "reasoning-delta", "id": self._reasoning, "delta": event.content})
        else:
            self._close_text(parts)
            self._close_reasoning(parts)
            self._other(event, parts)
        frames = [b"data: %s\n\n" % orjson.dumps(part) for part in parts]
        if frames:
            # The id of the event the parts came from, on the last of them: a client that
            # reconnects with it as `Last-Event-ID` gets what follows (the SDK ignores it).
            frames[-1] = b"id: %d\n%s" % (event_id, frames[-1])
        out = b"".join(frames)
        return out + DONE if isinstance(event, ev.CompleteEvent) else out

    def _other(self, event: ev.Event, parts: list[dict[str, Any]]) -> None:
        fields = event.fields()
        match event:
            case ev.StartEvent():
                self._task_id = event.task_id
                parts.append(
                    {"type": "start", "messageId": self._task_id, "messageMetadata": fields}
                )
            case ev.ToolStartEvent():
                parts.append(
                    {
                        "type": "tool-input-available",
                        "toolCallId": event.tool_call_id,
                        "toolName": event.tool_name,
                        "input": _json_or_text(event.arguments),
                        "dynamic": True,
                    }
                )
            case ev.ToolEndEvent():
                call = event.tool_call_id
                if event.is_error and event.result.startswith(DECLINED):
                    # The user said no (`addToolApprovalResponse`): the part ends denied.
                    parts.append({"type": "tool-output-denied", "toolCallId": call})
                elif event.is_error:
                    parts.append(
                        {"type": "tool-output-error", "toolCallId": call, "errorText": event.result}
                    )
                else:
                    parts.append(
                        {
                            "type": "tool-output-available",
                            "toolCallId": call,
                            "output": event.result,
                        }
                    )
                parts[-1]["dynamic"] = True
            case ev.ReferenceEvent():
                parts.extend(
                    {
                        "type": "source-url",
                        "sourceId": f"{self._task_id}-source-{index}",
                        "url": ref.url,
                        "title": ref.title or ref.url,
                    }
                    for index, ref in enumerate(event.references())
                )
            case ev.RecommendEvent():
                parts.append({"type": "data-recommend", "data": orjson.loads(event.content)})
            case ev.FileEvent():
                # A file that was not made is told in its data part alone: no URL to show.
                if event.status is None:
                    parts.append({"type": "file", "url": event.url, "mediaType": event.mime_type})
                parts.append({"type": "data-file", "id": event.file_id, "data": fields})
            case ev.PlanEvent() | ev.DeckEvent():
                # One part of each per message: a later one replaces the earlier in the client.
                parts.append({"type": f"data-{event.type}", "id": event.type, "data": fields})
            case ev.StepEvent():
                part_id = f"step-{event.task_id}"
                parts.append({"type": "data-step", "id": part_id, "data": fields})
            case ev.CritiqueEvent():
                part_id = f"critique-{event.round}"
                parts.append({"type": "data-critique", "id": part_id, "data": fields})
            case ev.QueuedEvent():
                parts.append({"type": "data-queued", "data": fields, "transient": True})
            case ev.ErrorEvent():
                if event.code == "RETRYING":
                    parts.append({"type": "data-retrying", "data": fields, "transient": True})
                else:
                    parts.append({"type": "error", "errorText": event.message})
            case ev.CompleteEvent():
                if event.status == "stopped":
                    parts.append({"type": "abort"})
                parts.append(
                    {
                        "type": "finish",
                        "finishReason": FINISH_REASONS.get(event.status, "error"),
                        "messageMetadata": fields,
                    }
                )
            case ev.ApprovalEvent(kind="tool"):
                # The call's part first (nothing of it ran), then the request the client answers
                # with `addToolApprovalResponse`.
                parts.append(
                    {
                        "type": "tool-input-available",
                        "toolCallId": event.tool_call_id,
                        "toolName": event.tool_name,
                        "input": event.arguments,
                        "dynamic": True,
                    }
                )
                parts.append(
                    {
                        "type": "tool-approval-request",
                        "approvalId": event.approval_id,
                        "toolCallId": event.tool_call_id,
                    }
                )
            case ev.ApprovalEvent():
                parts.append({"type": "data-approval", "id": event.approval_id, "data": fields})
            case ev.TextEvent() | ev.ThinkingEvent():
                raise AssertionError("deltas are translated by `translate`")
            case _:
                assert_never(event)

    def _close_text(self, parts: list[dict[str, Any]]) -> None:
        if self._text is not None:
            parts.append({"type": "text-end", "id": self._text})
            self._text = None

    def _close_reasoning(self, parts: list[dict[str, Any]]) -> None:
        if self._reasoning is not None:
            parts.append({"type": "reasoning-end", "id": self._reasoning})
            self._reasoning = None


def _json_or_text(arguments: str) -> Any:
    """A tool call's arguments as the object the model wrote, or the text when it is not JSON."""
    try:
        return orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments


def _question(request: ChatRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return "".join(part.text or "" for part in message.parts if part.type == "text")
    return ""


async def _regenerated(request: ChatRequest, user: str, services: ServicesDep) -> int | str | None:
    """`regenerate()`'s turn: the one whose question to answer again.

    A `messageId` of digits is a turn id (a message loaded from the history);
    any other (a live message's id, or none: the last answer) means the
    chat's latest answer, its active path's leaf.
    """
    if request.trigger != "regenerate-message":
        return None
    if request.message_id and TURN_ID.fullmatch(request.message_id):
        return request.message_id
    return (await services.store.get_tree(user, request.id)).leaf_id


def _approval(request: ChatRequest) -> Any:
    """The decision: ours as sent, or the one `addToolApprovalResponse` put on the last
    assistant message's tool part (`state: approval-responded`, `approval: {id, approved,
    reason}`), which `useChat` sends back with the chat."""
    if request.approval is not None:
        return request.approval
    last = request.messages[-1] if request.messages else None
    if last is None or last.role != "assistant":
        return None
    for part in reversed(last.parts):
        extra = part.model_extra or {}
        approval = extra.get("approval")
        if extra.get("state") != "approval-responded" or not isinstance(approval, dict):
            continue
        approved = approval.get("approved") is True
        return {
            "approvalId": approval.get("id"),
            "decision": "approve" if approved else "reject",
            "message": approval.get("reason"),
        }
    return None


def _stream_params(request: ChatRequest, regenerate: int | str | None = None) -> StreamParams:
    fields = {
        "fileId": request.file_id,
        "onDisconnect": request.on_disconnect,
        "multitaskStrategy": request.multitask_strategy,
        "webhook": request.webhook,
        "parentId": request.parent_id,
        "regenerate": regenerate,
        "model": request.model,
        "toolApproval": request.tool_approval,
        "reviewPlan": request.review_plan,
        "templateFileId": request.template_file_id,
        "projectId": request.project_id,
        "memory": request.memory,
        "approval": _approval(request),
    }
    try:
        return StreamParams.model_validate(
            {
                "query": _question(request),
                "conversationId": request.id,
                **{k: v for k, v in fields.items() if v is not None},
            }
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ApiError(422, f"{'.'.join(map(str, error['loc']))}: {error['msg']}") from exc


def _response(log: TranslatedLog, services: ServicesDep, **kwargs: Any) -> EventStreamResponse:
    response = EventStreamResponse(log, ping_seconds=services.http.sse_ping_seconds, **kwargs)
    response.headers[STREAM_HEADER[0]] = STREAM_HEADER[1]
    return response


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Bad input (no user text, bad id)"},
    404: {"description": "Unknown kind or fileId"},
    409: {"description": "A task is already running for this chat"},
    429: {"description": "Over a per-user limit; see Retry-After"},
    501: {"description": "This agent is not available in this version"},
    503: {"description": "A dependency is down"},
}


@router.post(
    "/{kind}",
    summary="Run an agent as an AI SDK UI message stream (useChat)",
    response_class=EventStreamResponse,
    status_code=200,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "UI message stream v1"},
        **_ERRORS,
    },
)
async def run_ai_sdk(
    kind: str,
    request: Annotated[ChatRequest, Body()],
    caller: CallerDep,
    services: ServicesDep,
) -> EventStreamResponse:
    """Start a turn of agent `kind` from `useChat`'s request, answered as a UI message stream.

    `id` is the conversation and the last user message's text the question;
    `fileId`, `onDisconnect`, `parentId`, `model`, `projectId` and `memory` may be added with
    the transport's `body`.
    `regenerate()` answers the regenerated turn's question again, as its sibling.
    """
    entry, user = agent_entry(services, kind), caller.user
    params = _stream_params(request, await _regenerated(request, user, services))
    run, on_disconnect = await services.streams.open(
        entry, params.request(), user, caller.limit_key
    )
    return _response(
        TranslatedLog(run.log, AiSdkTranslator()), services, on_disconnect=on_disconnect
    )


@router.get(
    "/{kind}/{chat_id}/stream",
    summary="Rejoin a chat's running turn (useChat resume)",
    response_class=EventStreamResponse,
    status_code=200,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "The turn's stream, from its start or after `Last-Event-ID`",
        },
        204: {"description": "Nothing runs on this chat (with `Last-Event-ID`: nor ended lately)"},
        400: {"description": "Bad chat id, or Last-Event-ID not a non-negative integer"},
        404: {"description": "Unknown kind"},
        410: {"description": "The run's first events are no longer kept"},
        503: {"description": "The task backend (Redis) is down"},
    },
)
async def resume_ai_sdk(
    kind: str,
    chat_id: str,
    user: UserDep,
    services: ServicesDep,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> Response:
    """The chat's running turn from its first part, then live until `finish`, on any instance.

    204 when nothing runs: `useChat` then shows the stored history as it is.
    With `Last-Event-ID` (the `id:` of the last part a client read before its
    stream was cut) only the parts after it come, and a turn that ended since
    (within `RESUME_RETENTION_SECONDS`) still answers: the client gets its end.
    """
    agent_entry(services, kind)
    if last_event_id is not None and not EVENT_ID.fullmatch(last_event_id):
        raise ApiError(400, "Last-Event-ID must be a non-negative integer")
    reader = await services.streams.reader(user, chat_id, 0)
    if reader is None:
        return Response(status_code=204)
    if last_event_id is not None:
        log = TranslatedLog(reader, AiSdkTranslator(), hide_through=int(last_event_id))
        return _response(log, services)
    if not await services.turns.running(user, chat_id):
        return Response(status_code=204)
    return _response(TranslatedLog(reader, AiSdkTranslator()), services)
