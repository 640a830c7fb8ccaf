"""Agent streams, stop and resume (API.md "Agent streams").

Every stream endpoint takes the same parameters by GET query string (what
`fetch` GET and `EventSource` send) or by POST JSON body, and answers either
an event stream or, before any byte of it, a JSON error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import APIRouter, Body, Depends, Header, Query
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.agents.approvals import ApprovalAnswer, ApprovalMode, Decision
from app.agents.registry import AgentEntry
from app.api.auth import CallerDep, UserDep
from app.api.deps import ServicesDep
from app.api.envelope import ApiError, Envelope, ok
from app.api.query_model import QueryModel
from app.api.sse import EventStreamResponse
from app.auth import Caller
from app.config import DisconnectPolicy
from app.core.wire import WireModel
from app.llm.model_entry import DEFAULT_MODEL_ID
from app.service.streams import MemoryMode, TurnRequest, valid_conversation_id
from app.service.turns import Strategy

router = APIRouter(prefix="/agent", tags=["agent"])

EVENT_ID = re.compile(r"[0-9]{1,18}")
"""An event id as we send them; ASCII digits only, and short enough to stay an int64."""
STOP_WAIT_SECONDS = 5.0


class ApprovalParams(WireModel):
    """A decision on a paused turn's pending approval (the stream field `approval`)."""

    approval_id: str = Field(min_length=1, max_length=64)
    decision: Decision
    arguments: dict[str, Any] | None = Field(
        default=None, description="`edit`: the arguments to run the call with."
    )
    message: str | None = Field(
        default=None, max_length=4000, description="`reject`: the reason, given to the model."
    )

    @model_validator(mode="after")
    def _edit_has_arguments(self) -> ApprovalParams:
        if self.decision == "edit" and self.arguments is None:
            raise ValueError("an `edit` decision needs `arguments` (an object)")
        return self

    def answer(self) -> ApprovalAnswer:
        return ApprovalAnswer(self.approval_id, self.decision, self.arguments, self.message)


def approval_field(value: object) -> object:
    """The `approval` field as a GET sends it (a JSON string) or a JSON body (an object)."""
    return orjson.loads(value) if isinstance(value, str | bytes) else value


class StreamParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    query: str | None = Field(default=None, description="The user's question.")
    conversation_id: str | None = Field(
        default=None,
        alias="conversationId",
        description="The conversation; a new one is made when missing.",
    )
    file_id: str | None = Field(
        default=None,
        alias="fileId",
        description="An uploaded file to ask about (required by the file agent).",
    )
    on_disconnect: DisconnectPolicy | None = Field(
        default=None,
        alias="onDisconnect",
        description="What happens to the run when the client goes away (default: settings).",
    )
    multitask_strategy: Strategy | None = Field(
        default=None,
        alias="multitaskStrategy",
        description="When the conversation is busy: `reject` (409, the default), `enqueue`"
        " (run after it; the stream opens with `queued`), `interrupt` (stop it, keep its"
        " partial answer), `rollback` (stop it and delete it).",
    )
    webhook: str | None = Field(
        default=None,
        max_length=2048,
        description="A URL called (signed POST) once the turn ends; default: WEBHOOK_URL.",
    )
    parent_id: int | str | None = Field(
        default=None,
        alias="parentId",
        description="The turn the new one follows (a turn of this conversation; `0`: a new"
        " first question); default: the active path's leaf. Editing a question is a new turn"
        " with the edited turn's `parentId`. The model's memory is the path to it.",
    )
    regenerate: int | str | None = Field(
        default=None,
        description="A turn id: answer that turn's question again, as its new sibling"
        " (`query` may be left out).",
    )
    model: str | None = Field(
        default=None,
        max_length=64,
        description="The id of the model to answer with (`GET /agent/models`); default: the"
        " agent kind's (`AGENT_MODELS`), else `default`. Unknown: 400 `MODEL_UNKNOWN`.",
    )
    tool_approval: ApprovalMode | None = Field(
        default=None,
        alias="toolApproval",
        description="`ask`: every acting tool of the turn waits for the user's yes; `auto`:"
        " only those TOOL_APPROVAL names.",
    )
    review_plan: bool | None = Field(
        default=None,
        alias="reviewPlan",
        description="Deep research: each round's plan waits for the user's `approval`"
        " (approve, edit with `arguments: {tasks}`, reject with `message`).",
    )
    template_file_id: str | None = Field(
        default=None,
        alias="templateFileId",
        max_length=64,
        description="PPT builder: an uploaded .pptx whose masters, layouts and theme the new"
        " deck is built on (its layouts matched to the slide kinds by their placeholders)."
        " Not the caller's: 404; not a readable .pptx, or another agent: 400; without a"
        " layout the builder needs: 400 `PPT_TEMPLATE_UNUSABLE`, naming it.",
    )
    approval: ApprovalParams | None = Field(
        default=None,
        description="`{approvalId, decision: approve|reject|edit, arguments?, message?}` (a JSON"
        " string in a GET): decides the conversation's paused turn, which goes on in this"
        " stream; 409 when nothing waits on that approvalId.",
    )
    project_id: str | None = Field(
        default=None,
        alias="projectId",
        max_length=64,
        description="A project of the caller's (`/projects`) to start the new conversation in;"
        " later turns stay in it without naming it. Not the caller's: 404; a conversation"
        " with turns outside that project: 409.",
    )
    memory: MemoryMode | None = Field(
        default=None,
        description="`off`: a temporary turn, which neither reads nor writes the caller's"
        " memory (`/memory`).",
    )

    _approval_json = field_validator("approval", mode="before")(approval_field)

    def request(self) -> TurnRequest:
        return TurnRequest(
            query=self.query,
            conversation_id=self.conversation_id,
            file_id=self.file_id,
            on_disconnect=self.on_disconnect,
            strategy=self.multitask_strategy,
            webhook=self.webhook,
            parent_id=self.parent_id,
            regenerate=self.regenerate,
            model=self.model,
            tool_approval=self.tool_approval,
            review_plan=bool(self.review_plan),
            template_file_id=self.template_file_id,
            approval=self.approval.answer() if self.approval else None,
            project_id=self.project_id,
            memory=self.memory,
        )


STREAM_QUERY = QueryModel(StreamParams)
StreamQuery = Annotated[StreamParams, Depends(STREAM_QUERY)]
"""The query string of every stream request, GET or POST (see api/query_model.py)."""


class StopParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    conversation_id: str | None = Field(
        default=None, alias="conversationId", description="The conversation to stop."
    )


class AgentKind(WireModel):
    kind: str = Field(description="The path segment of `/agent/{kind}/stream`.")
    name: str = Field(description="What to call it in a picker.")
    available: bool = Field(
        description="This service runs it; a stream for an unavailable kind answers 501."
    )
    needs_file: bool = Field(description="A stream must name a `fileId`.")
    accepts_file: bool = Field(description="A stream may name a `fileId`.")
    description: str = Field(description="What it does, in a sentence.")
    examples: list[str] = Field(description="Requests it answers well, to offer a new user.")


class Limits(WireModel):
    query_max_chars: int = Field(description="The longest `query` a stream takes (else 413).")
    upload_max_bytes: int = Field(description="The largest upload `/file/upload` takes (else 413).")


class ModelInfo(WireModel):
    id: str = Field(description="What a stream's `model` names.")
    label: str = Field(description="What to call it in a picker.")
    provider: str
    vision: bool = Field(description="It reads images.")
    context_window: int | None = Field(description="Tokens it takes in at once, where known.")
    default: bool = Field(description="The model of a turn that names none (`default`).")
    default_for: list[str] = Field(
        description="The agent kinds whose turns take it when they name none (`AGENT_MODELS`)."
    )


class StopResult(BaseModel):
    success: bool
    message: str


Params = TypeVar("Params", bound=BaseModel)


def _merged(query: Params, body: Params | None) -> Params:
    """A POST's fields: the JSON body's, and the query string's where the body has none."""
    if body is None:
        return query
    # The fields' values as validated (a nested model stays one), not their dump.
    return query.model_copy(update={name: getattr(body, name) for name in body.model_fields_set})


async def _stream(
    entry: AgentEntry, params: StreamParams, caller: Caller, services: ServicesDep
) -> EventStreamResponse:
    run, on_disconnect = await services.streams.open(
        entry, params.request(), caller.user, caller.limit_key
    )
    return EventStreamResponse(
        run.log, ping_seconds=services.http.sse_ping_seconds, on_disconnect=on_disconnect
    )


def stream_routes(entries: Iterable[AgentEntry]) -> APIRouter:
    """`GET` and `POST /agent/{kind}/stream` for each of the app's agent kinds."""
    streams = APIRouter(prefix="/agent", tags=["agent"])
    for entry in entries:
        _add_stream_routes(streams, entry)
    return streams


def _add_stream_routes(streams: APIRouter, entry: AgentEntry) -> None:
    kind, path = entry.kind, f"/{entry.kind}/stream"
    responses: dict[int | str, dict[str, object]] = {
        200: {"content": {"text/event-stream": {}}, "description": "The event stream"},
        404: {
            "description": "Unknown fileId or projectId, or a parentId/regenerate not a turn of"
            " the caller's"
        },
        400: {
            "description": "Bad input, a `webhook` URL that may not be called, an unknown"
            " `model` (`data.error`: `MODEL_UNKNOWN`), or a `templateFileId` that is not a"
            " readable .pptx or lacks a layout the builder needs (`data.error`:"
            " `PPT_TEMPLATE_UNUSABLE`)"
        },
        409: {
            "description": "A task is already running (`multitaskStrategy: reject`), no"
            " paused turn waits on the `approval`'s approvalId (unknown, or decided), or the"
            " conversation has turns outside the `projectId` named"
        },
        429: {
            "description": "Over a per-user limit (streams at once, or a minute); see Retry-After"
        },
        501: {"description": "This agent is not available in this version"},
        503: {"description": "A dependency is down"},
    }

    async def stream_get(
        params: StreamQuery, caller: CallerDep, services: ServicesDep
    ) -> EventStreamResponse:
        return await _stream(entry, params, caller, services)

    async def stream_post(
        query: StreamQuery,
        caller: CallerDep,
        services: ServicesDep,
        body: Annotated[StreamParams | None, Body()] = None,
    ) -> EventStreamResponse:
        return await _stream(entry, _merged(query, body), caller, services)

    for method, endpoint in (("GET", stream_get), ("POST", stream_post)):
        streams.add_api_route(
            path,
            endpoint,
            methods=[method],
            summary=entry.summary,
            description=__doc__ or "",
            response_class=EventStreamResponse,
            status_code=200,
            responses=responses,
            name=f"{kind}_stream_{method.lower()}",
            openapi_extra=STREAM_QUERY.openapi_extra,
        )


@router.get("/kinds", summary="The agents this service offers")
async def list_agent_kinds(user: UserDep, services: ServicesDep) -> Envelope[list[AgentKind]]:
    """Every agent kind the API names, and whether this build, so configured, runs it.

    The chat page fills its agent picker from this, so it never offers one that answers 501.
    """
    running = services.turns.kinds()
    return ok(
        [
            AgentKind(
                kind=entry.kind,
                name=entry.name,
                available=entry.kind in running,
                needs_file=entry.needs_file,
                accepts_file=entry.accepts_file,
                description=entry.description or entry.summary,
                examples=list(entry.examples),
            )
            for entry in services.agents.values()
        ]
    )


@router.get("/limits", summary="What a request may hold")
async def read_limits(user: UserDep, services: ServicesDep) -> Envelope[Limits]:
    """The limits a client checks before it sends, so a person hears of them while typing."""
    settings = services.http
    return ok(
        Limits(query_max_chars=settings.query_max_chars, upload_max_bytes=settings.upload_max_bytes)
    )


@router.get("/models", summary="The models a turn may pick")
async def list_models(user: UserDep, services: ServicesDep) -> Envelope[list[ModelInfo]]:
    """Every model of the catalog (`MODELS`), `default` first: never a key or an endpoint.

    The chat page fills its model picker from this.
    """
    catalog = services.models
    kinds_of: dict[str, list[str]] = {}
    for kind, model_id in catalog.spec.agent_models.items():
        kinds_of.setdefault(model_id, []).append(kind)
    return ok(
        [
            ModelInfo(
                id=entry.id,
                label=entry.shown_label,
                provider=entry.provider,
                vision=entry.vision,
                context_window=entry.context_window,
                default=entry.id == DEFAULT_MODEL_ID,
                default_for=kinds_of.get(entry.id, []),
            )
            for entry in catalog.entries()
        ]
    )


async def stop_conversation(
    conversation_id: str | None, user: str, services: ServicesDep
) -> StopResult:
    """Stop `user`'s turn of the conversation, and empty its queue (also an admin's stop)."""
    if not conversation_id:
        raise ApiError(400, "conversationId is required, in the query string or the JSON body")
    valid_conversation_id(conversation_id)
    if await services.turns.stop(user, conversation_id):
        return StopResult(success=True, message="The task was stopped")
    return StopResult(success=False, message="No task is running for this conversation")


@router.get("/stop", summary="Stop the conversation's running task")
async def stop_task_get(
    conversation_id: Annotated[str, Query(alias="conversationId")],
    user: UserDep,
    services: ServicesDep,
) -> StopResult:
    """Stop the running task from any instance; stopping twice is safe (`success: false`)."""
    return await stop_conversation(conversation_id, user, services)


@router.post("/stop", summary="Stop the conversation's running task")
async def stop_task_post(
    query: Annotated[StopParams, Query()],
    user: UserDep,
    services: ServicesDep,
    body: Annotated[StopParams | None, Body()] = None,
) -> StopResult:
    """Stop the running task from any instance; stopping twice is safe (`success: false`).

    `conversationId` comes in the query string or the JSON body.
    """
    return await stop_conversation(_merged(query, body).conversation_id, user, services)


@router.get(
    "/resume",
    summary="Resume a run's event stream",
    response_class=EventStreamResponse,
    status_code=200,
    responses={
        400: {"description": "Bad conversationId, or Last-Event-ID not a non-negative integer"},
        404: {"description": "No running or recent run"},
        410: {"description": "The events after that id are no longer kept"},
        503: {"description": "The task backend (Redis) is down"},
    },
)
async def resume_stream(
    conversation_id: Annotated[str, Query(alias="conversationId")],
    user: UserDep,
    services: ServicesDep,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    last_event_id: Annotated[str | None, Query(alias="lastEventId")] = None,
) -> EventStreamResponse:
    """Replay the events after `Last-Event-ID` (header or `lastEventId`), then follow live.

    Works on any instance: the run's events are read from this instance's
    memory when it runs here, else from the shared log (Redis). A run ends
    with `complete`; one whose instance died ends with `complete{status: interrupted}`.
    """
    raw = last_event_id_header or last_event_id or "0"
    if not EVENT_ID.fullmatch(raw):
        raise ApiError(400, "Last-Event-ID must be a non-negative integer")
    after = int(raw)
    reader = await services.streams.reader(user, conversation_id, after)
    if reader is None:
        raise ApiError(404, "No running or recent task for this conversation")
    return EventStreamResponse(reader, after=after, ping_seconds=services.http.sse_ping_seconds)
