"""The OpenAPI document says what a stream carries: the event union, told apart by `type`.

FastAPI can only say that a stream is `text/event-stream` of some string.
A client generated from that would know nothing of the frames, so every
operation that answers an event stream gets, as the schema of that media
type, `AgentEvent`: a `oneOf` of the frame objects below with a
discriminator on `type`. The schema is of one frame's `data:` object (an
SSE body is a sequence of them: `id: <n>`, `data: <one object>`, a blank
line; `: ping` comments between).

The models here only document: the frames are written by `wire()` in
app/core/events.py, and a test validates streamed frames against this
document, so the two cannot drift apart unseen.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import FastAPI
from pydantic import Field, TypeAdapter

from app.api.openapi_errors import amend_openapi
from app.core.events import RunStatus, StepStatus
from app.core.wire import WireModel

EVENT_UNION = "AgentEvent"
STREAM_TYPE = "text/event-stream"


class StartEvent(WireModel):
    """First: which conversation, stored row and run this stream is."""

    type: Literal["start"]
    conversation_id: str
    session_id: int
    agent_type: str
    task_id: str
    trace_id: str | None = Field(
        default=None, description="The run's OpenTelemetry trace id, while tracing is on."
    )


class QueuedEvent(WireModel):
    """First, when the conversation is busy and the request waits (`enqueue`); its turn's
    events follow in the same stream once the turns before it have ended."""

    type: Literal["queued"]
    conversation_id: str
    position: int


class ThinkingEvent(WireModel):
    """Reasoning text, a delta."""

    type: Literal["thinking"]
    content: str


class TextEvent(WireModel):
    """Answer text, a delta."""

    type: Literal["text"]
    content: str


class ToolStartEvent(WireModel):
    """A tool call begins; `taskId` names the research task that made it (deep research)."""

    type: Literal["tool_start"]
    tool_name: str
    tool_call_id: str
    arguments: str = Field(description="The call's arguments, a JSON object as text.")
    task_id: str | None = None


class ToolEndEvent(WireModel):
    """A tool call ends; `result` is cut for display."""

    type: Literal["tool_end"]
    tool_name: str
    tool_call_id: str
    result: str
    is_error: bool
    task_id: str | None = None


class ReferenceEvent(WireModel):
    """The sources used, once, before `recommend`."""

    type: Literal["reference"]
    content: str = Field(description="A JSON array, as text, of {url, title, content}.")
    count: int


class RecommendEvent(WireModel):
    """Follow-up questions, after the answer."""

    type: Literal["recommend"]
    content: str = Field(description="A JSON array, as text, of question strings.")
    count: int


class FileEvent(WireModel):
    """A file the agent made (a deck, a skill's output), ready to download at `url`."""

    type: Literal["file"]
    file_id: str
    name: str
    url: str
    size: int
    mime_type: str


class DeckSlide(WireModel):
    title: str
    page_type: str


class DeckVersion(WireModel):
    version: int
    name: str
    url: str


class DeckEvent(WireModel):
    """A deck's slides: `outline` once planned, `ready` once stored (the PowerPoint builder)."""

    type: Literal["deck"]
    stage: Literal["outline", "ready"]
    version: int
    title: str
    template: str
    slides: list[DeckSlide]
    versions: list[DeckVersion]
    thumbnails: list[str]


class ErrorEvent(WireModel):
    """A failure; `code: RETRYING` is a notice and the stream goes on, anything else ends it."""

    type: Literal["error"]
    code: str
    message: str
    detail: str
    content: str = Field(description="The same as `message`, for the original client.")


class Usage(WireModel):
    prompt_tokens: int
    completion_tokens: int
    estimated: bool


class CompleteEvent(WireModel):
    """Always last, sent once the turn is stored; times in milliseconds."""

    type: Literal["complete"]
    status: RunStatus
    first_response_time: int | None
    total_response_time: int
    tools: list[str]
    usage: Usage


class PlannedTask(WireModel):
    id: str
    title: str
    depends_on: list[str]
    status: StepStatus


class PlanEvent(WireModel):
    """A research plan (deep research)."""

    type: Literal["plan"]
    round: int
    tasks: list[PlannedTask]


class StepSource(WireModel):
    url: str
    title: str


class StepEvent(WireModel):
    """A research task started, finished (with its summary and sources) or failed."""

    type: Literal["step"]
    task_id: str
    status: StepStatus
    summary: str
    sources: list[StepSource]


class CritiqueEvent(WireModel):
    """The research checked itself: passed, or what is missing."""

    type: Literal["critique"]
    round: int
    passed: bool
    feedback: str


AgentEvent = Annotated[
    StartEvent
    | QueuedEvent
    | ThinkingEvent
    | TextEvent
    | ToolStartEvent
    | ToolEndEvent
    | ReferenceEvent
    | RecommendEvent
    | FileEvent
    | DeckEvent
    | ErrorEvent
    | CompleteEvent
    | PlanEvent
    | StepEvent
    | CritiqueEvent,
    Field(discriminator="type"),
]


def document_events(app: FastAPI) -> None:
    """Make `app.openapi()` describe every event stream's frames; call once routes are added."""
    amend_openapi(app, _with_events)


def _with_events(document: dict[str, Any]) -> dict[str, Any]:
    union = TypeAdapter(AgentEvent).json_schema(
        by_alias=True, ref_template="#/components/schemas/{model}", mode="serialization"
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    clashes = set(union.get("$defs", {})) & set(schemas)
    assert not clashes, f"event schemas named like the API's own: {clashes}"
    schemas.update(union.pop("$defs", {}))
    schemas[EVENT_UNION] = {
        **union,
        "title": EVENT_UNION,
        "description": "The `data:` object of one frame of an event stream, by `type`.",
    }
    stream = {"schema": {"$ref": f"#/components/schemas/{EVENT_UNION}"}}
    for route, path in document.get("paths", {}).items():
        if not route.startswith("/agent/"):
            continue  # AG-UI's, the AI SDK's and A2A's streams carry their own formats
        for operation in path.values():
            ok = operation.get("responses", {}).get("200", {})
            content: dict[str, Any] = ok.get("content", {})
            if any(media.startswith(STREAM_TYPE) for media in content):
                ok["content"] = {STREAM_TYPE: stream}
                ok["description"] = (
                    "The event stream: frames of `id: <n>` and `data: <one AgentEvent as JSON>`, "
                    "`: ping` comments while idle; it ends after `complete`."
                )
    return document
