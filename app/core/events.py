"""The typed events an agent run emits, and their one wire encoding.

A closed union with a literal `type`, one class per kind (API.md, "SSE
frames"). Each event knows its camelCase wire shape; `encode_frame` turns it
into the SSE bytes once, so every reader of a run's log shares those bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

RunStatus = Literal["completed", "stopped", "failed", "paused", "interrupted"]
StepStatus = Literal["pending", "running", "completed", "failed"]
"""Where one task of a research plan is (deep research)."""


@dataclass(slots=True)
class StartEvent:
    conversation_id: str
    session_id: int
    agent_type: str
    task_id: str
    trace_id: str | None = None
    """The run's trace, only when tracing is on, so a user's report can be found in it."""
    type: Literal["start"] = "start"

    def wire(self) -> dict[str, Any]:
        frame: dict[str, Any] = {
            "type": self.type,
            "conversationId": self.conversation_id,
            "sessionId": self.session_id,
            "agentType": self.agent_type,
            "taskId": self.task_id,
        }
        if self.trace_id is not None:
            frame["traceId"] = self.trace_id
        return frame


@dataclass(slots=True)
class ThinkingEvent:
    content: str
    type: Literal["thinking"] = "thinking"

    def wire(self) -> dict[str, Any]:
        return {"type": self.type, "content": self.content}


@dataclass(slots=True)
class TextEvent:
    content: str
    type: Literal["text"] = "text"

    def wire(self) -> dict[str, Any]:
        return {"type": self.type, "content": self.content}


@dataclass(slots=True)
class ToolStartEvent:
    tool_name: str
    tool_call_id: str
    arguments: str
    task_id: str | None = None
    """The plan task that made the call, when an agent runs several (deep research)."""
    type: Literal["tool_start"] = "tool_start"

    def wire(self) -> dict[str, Any]:
        return _with_task(
            {
                "type": self.type,
                "toolName": self.tool_name,
                "toolCallId": self.tool_call_id,
                "arguments": self.arguments,
            },
            self.task_id,
        )


@dataclass(slots=True)
class ToolEndEvent:
    tool_name: str
    tool_call_id: str
    result: str
    is_error: bool = False
    task_id: str | None = None
    type: Literal["tool_end"] = "tool_end"

    def wire(self) -> dict[str, Any]:
        return _with_task(
            {
                "type": self.type,
                "toolName": self.tool_name,
                "toolCallId": self.tool_call_id,
                "result": self.result,
                "isError": self.is_error,
            },
            self.task_id,
        )


def _with_task(frame: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    """`taskId` only where there is one, so other agents' frames keep the original shape."""
    if task_id is not None:
        frame["taskId"] = task_id
    return frame


@dataclass(frozen=True, slots=True)
class Reference:
    url: str
    title: str
    content: str

    def wire(self) -> dict[str, str]:
        return {"url": self.url, "title": self.title, "content": self.content}

    @classmethod
    def listed(cls, items: object) -> list[Reference]:
        """References from `{url, title, content}` objects, as search tools and agents list them.

        What a search engine, an MCP server or a remote agent lists is not
        trusted: the page shows each reference as a link, so only web (http,
        https) addresses are kept, and an item that is not an object is dropped.
        """
        if not isinstance(items, list):
            return []
        return [
            cls(url, str(item.get("title", "")), str(item.get("content", "")))
            for item in items
            if isinstance(item, dict)
            and (url := str(item.get("url", ""))).startswith(("http://", "https://"))
        ]


@dataclass(slots=True)
class ReferenceEvent:
    references: list[Reference]
    type: Literal["reference"] = "reference"

    def wire(self) -> dict[str, Any]:
        items = [r.wire() for r in self.references]
        return {
            "type": self.type,
            "content": orjson.dumps(items).decode(),
            "count": len(items),
        }


@dataclass(slots=True)
class RecommendEvent:
    questions: list[str]
    type: Literal["recommend"] = "recommend"

    def wire(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "content": orjson.dumps(self.questions).decode(),
            "count": len(self.questions),
        }


@dataclass(slots=True)
class FileEvent:
    file_id: str
    name: str
    url: str
    size: int
    mime_type: str
    type: Literal["file"] = "file"

    def wire(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "fileId": self.file_id,
            "name": self.name,
            "url": self.url,
            "size": self.size,
            "mimeType": self.mime_type,
        }


@dataclass(frozen=True, slots=True)
class DeckSlide:
    title: str
    page_type: str


@dataclass(frozen=True, slots=True)
class DeckVersion:
    version: int
    name: str
    url: str


@dataclass(slots=True)
class DeckEvent:
    """A deck's slide list, for a page that previews it (the original client ignores it).

    `stage` is `outline` once the outline is written (no file yet), `ready` when
    the deck is stored; then `versions` lists every version still downloadable.
    """

    stage: Literal["outline", "ready"]
    version: int
    title: str
    template: str
    slides: list[DeckSlide]
    versions: list[DeckVersion] = field(default_factory=list)
    thumbnails: list[str] = field(default_factory=list)
    """Download URLs of one PNG per slide, when the service can draw them."""
    type: Literal["deck"] = "deck"

    def wire(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "stage": self.stage,
            "version": self.version,
            "title": self.title,
            "template": self.template,
            "slides": [{"title": s.title, "pageType": s.page_type} for s in self.slides],
            "versions": [
                {"version": v.version, "name": v.name, "url": v.url} for v in self.versions
            ],
            "thumbnails": self.thumbnails,
        }


@dataclass(slots=True)
class QueuedEvent:
    """The conversation is busy and this request waits its turn (`multitaskStrategy: enqueue`)."""

    conversation_id: str
    position: int
    """Its place in the conversation's queue when it joined: 1 runs next."""
    type: Literal["queued"] = "queued"

    def wire(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "conversationId": self.conversation_id,
            "position": self.position,
        }


@dataclass(slots=True)
class ErrorEvent:
    """A failure shown to the user.

    `message` comes from a fixed table, never from upstream; `detail` is for
    diagnosing it: what was called and what the upstream said (bounded, key scrubbed).
    """

    code: str
    message: str
    detail: str = ""
    type: Literal["error"] = "error"

    def wire(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "code": self.code,
            "message": self.message,
            "detail": self.detail,
            "content": self.message,
        }


@dataclass(slots=True)
class CompleteEvent:
    status: RunStatus
    first_response_time: int | None
    total_response_time: int
    tools: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False
    """Some of the usage was counted locally: a call cut short, or a provider that reported none."""
    type: Literal["complete"] = "complete"

    def wire(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "firstResponseTime": self.first_response_time,
            "totalResponseTime": self.total_response_time,
            "tools": self.tools,
            "usage": {
                "promptTokens": self.prompt_tokens,
                "completionTokens": self.completion_tokens,
                "estimated": self.usage_estimated,
            },
        }


@dataclass(frozen=True, slots=True)
class PlannedTask:
    """One task of a research plan as clients draw it."""

    id: str
    title: str
    depends_on: tuple[str, ...] = ()
    status: StepStatus = "pending"

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "dependsOn": list(self.depends_on),
            "status": self.status,
        }


@dataclass(slots=True)
class PlanEvent:
    """A research plan was made (or, on a resumed turn, is shown again as it stands)."""

    round: int
    tasks: list[PlannedTask]
    type: Literal["plan"] = "plan"

    def wire(self) -> dict[str, Any]:
        return {"type": self.type, "round": self.round, "tasks": [t.wire() for t in self.tasks]}


@dataclass(slots=True)
class StepEvent:
    """A plan task moved: started, finished with a summary, or failed."""

    task_id: str
    status: StepStatus
    summary: str = ""
    sources: list[Reference] = field(default_factory=list)
    """What a finished task read, for a client that shows a task's sources on demand."""
    type: Literal["step"] = "step"

    def wire(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "taskId": self.task_id,
            "status": self.status,
            "summary": self.summary,
            "sources": [{"url": s.url, "title": s.title} for s in self.sources],
        }


@dataclass(slots=True)
class CritiqueEvent:
    """The research checked itself: good enough to report, or what is still missing."""

    round: int
    passed: bool
    feedback: str
    type: Literal["critique"] = "critique"

    def wire(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "round": self.round,
            "passed": self.passed,
            "feedback": self.feedback,
        }


Event = (
    StartEvent
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
    | CritiqueEvent
    | QueuedEvent
)


def encode_data(event: Event) -> bytes:
    """The event's JSON object, compact, UTF-8."""
    return orjson.dumps(event.wire())


def encode_frame(event_id: int, data: bytes) -> bytes:
    """One SSE frame: `id:` then a single `data:` line (orjson never emits raw newlines)."""
    return b"id: %d\ndata: %s\n\n" % (event_id, data)


PING_FRAME = b": ping\n\n"
