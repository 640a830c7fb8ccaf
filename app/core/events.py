"""The typed events an agent run emits: one closed union, its one encoder and its one schema.

One class per kind, told apart by a literal `type` (API.md, "SSE frames").
Each class's fields are its wire shape, camelCase by the alias generator, so
the same declaration gives the frame (`encode_data`, once per event: every
reader of a run's log shares those bytes), the typed event back from a frame
(`decode_event`, for the translators to other wire formats) and the OpenAPI
schema of the stream (`event_schema`). Adding a kind is one class here plus
its place in `Event`; each translator's `match` then fails the type check
until it handles the new kind too.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

import orjson
from pydantic import ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

RunStatus = Literal["completed", "stopped", "failed", "paused", "interrupted"]
StepStatus = Literal["pending", "running", "completed", "failed"]
"""Where one task of a research plan is (deep research)."""

T = TypeVar("T")


def _is_none(value: object) -> bool:
    return value is None


OmittedWhenNone = Annotated[T | None, Field(exclude_if=_is_none)]
"""A field sent only when it has a value, so other agents' frames keep the original shape."""


def _wire_config(*, optional: tuple[str, ...] = ()) -> ConfigDict:
    """camelCase on the wire; attribute docstrings as the schema's descriptions.

    Every field is always sent, so the schema marks every field required except the
    `optional` ones (`OmittedWhenNone`), which a frame may leave out.
    """

    def not_required(schema: dict[str, Any]) -> None:
        required = [name for name in schema.get("required", []) if name not in optional]
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)

    return ConfigDict(
        alias_generator=to_camel,
        serialize_by_alias=True,
        validate_by_name=True,
        use_attribute_docstrings=True,
        json_schema_serialization_defaults_required=True,
        json_schema_extra=not_required if optional else None,
    )


WIRE = _wire_config()


class _Wire:
    """What every event and every record inside one can do: be its wire object."""

    __slots__ = ()

    def wire(self) -> dict[str, Any]:
        """The wire object, as a client decodes it (for tests and stored copies)."""
        wired: dict[str, Any] = _adapter(type(self)).dump_python(self, mode="json")
        return wired

    def fields(self) -> dict[str, Any]:
        """The wire object without its `type`: what another format carries as the event's data."""
        data: dict[str, Any] = _adapter(type(self)).dump_python(self, mode="json", exclude={"type"})
        return data


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(kind: type) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    return adapter


@dataclass(slots=True)
class StartEvent(_Wire):
    """First: which conversation, stored row and run this stream is."""

    __pydantic_config__ = _wire_config(optional=("traceId",))
    type: Literal["start"] = field(default="start", kw_only=True)

    conversation_id: str
    row_id: Annotated[int, Field(alias="sessionId")]
    """The stored turn's row (`ai_session.id`): `sessionId` on the wire, as the original has it."""
    agent_type: str
    task_id: str
    trace_id: OmittedWhenNone[str] = None
    """The run's OpenTelemetry trace id, only while tracing is on."""


@dataclass(slots=True)
class ThinkingEvent(_Wire):
    """Reasoning text, a delta."""

    __pydantic_config__ = WIRE
    type: Literal["thinking"] = field(default="thinking", kw_only=True)

    content: str


@dataclass(slots=True)
class TextEvent(_Wire):
    """Answer text, a delta."""

    __pydantic_config__ = WIRE
    type: Literal["text"] = field(default="text", kw_only=True)

    content: str


@dataclass(slots=True)
class ToolStartEvent(_Wire):
    """A tool call begins; `taskId` names the research task that made it (deep research)."""

    __pydantic_config__ = _wire_config(optional=("taskId",))
    type: Literal["tool_start"] = field(default="tool_start", kw_only=True)

    tool_name: str
    tool_call_id: str
    arguments: str
    """The call's arguments, a JSON object as text."""
    task_id: OmittedWhenNone[str] = None


@dataclass(slots=True)
class ToolEndEvent(_Wire):
    """A tool call ends; `result` is cut for display."""

    __pydantic_config__ = _wire_config(optional=("taskId",))
    type: Literal["tool_end"] = field(default="tool_end", kw_only=True)

    tool_name: str
    tool_call_id: str
    result: str
    is_error: bool = False
    task_id: OmittedWhenNone[str] = None


@dataclass(frozen=True, slots=True)
class Reference(_Wire):
    """A source an answer used."""

    __pydantic_config__ = WIRE

    url: str
    title: str
    content: str

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
class _ListAsText(_Wire):
    """`content` a JSON array as text and `count` its length: what the original client parses."""

    type: str = field(default="", kw_only=True)
    content: str
    """A JSON array, as text."""
    count: int

    @staticmethod
    def _text(items: list[Any]) -> tuple[str, int]:
        return orjson.dumps(items).decode(), len(items)


@dataclass(slots=True)
class ReferenceEvent(_ListAsText):
    """The sources used, once, before `recommend`: `content` lists {url, title, content}."""

    __pydantic_config__ = WIRE
    type: Literal["reference"] = field(default="reference", kw_only=True)

    @classmethod
    def of(cls, references: Iterable[Reference]) -> ReferenceEvent:
        return cls(*cls._text([r.wire() for r in references]))

    def references(self) -> list[Reference]:
        """The list as sent: our own, so kept whole (a document's passages are relative URLs)."""
        return [
            Reference(str(item["url"]), str(item.get("title", "")), str(item.get("content", "")))
            for item in orjson.loads(self.content)
        ]


@dataclass(slots=True)
class RecommendEvent(_ListAsText):
    """Follow-up questions, after the answer: `content` lists the question strings."""

    __pydantic_config__ = WIRE
    type: Literal["recommend"] = field(default="recommend", kw_only=True)

    @classmethod
    def of(cls, questions: list[str]) -> RecommendEvent:
        return cls(*cls._text(list(questions)))

    def questions(self) -> list[str]:
        return [str(q) for q in orjson.loads(self.content)]


@dataclass(slots=True)
class FileEvent(_Wire):
    """A file the agent made (a deck, a report, a skill's output), ready to download at `url`;
    or one it could not make (`status: failed`, with `error`, no bytes)."""

    __pydantic_config__ = _wire_config(optional=("status", "error"))
    type: Literal["file"] = field(default="file", kw_only=True)

    file_id: str
    name: str
    url: str
    size: int
    mime_type: str
    status: OmittedWhenNone[Literal["failed"]] = None
    """Only for a file that could not be made; a made file has none."""
    error: OmittedWhenNone[str] = None
    """Why it could not be made, in words a user understands."""


@dataclass(frozen=True, slots=True)
class DeckSlide(_Wire):
    __pydantic_config__ = WIRE

    title: str
    page_type: str


@dataclass(frozen=True, slots=True)
class DeckVersion(_Wire):
    __pydantic_config__ = WIRE

    version: int
    name: str
    url: str


@dataclass(frozen=True, slots=True)
class DeckLayout(_Wire):
    """Where a slide kind goes on a user's own template: the layout that holds it."""

    __pydantic_config__ = WIRE

    page_type: str
    layout: str
    """The layout's name in the template."""
    placeholders: list[str]
    """The fields it fills, each in a placeholder of that layout."""


@dataclass(slots=True)
class DeckEvent(_Wire):
    """A deck's slides: `outline` once planned (no file yet), `ready` once stored, with
    every version still downloadable (the PowerPoint builder; the original client
    ignores it)."""

    __pydantic_config__ = WIRE
    type: Literal["deck"] = field(default="deck", kw_only=True)

    stage: Literal["outline", "ready"]
    version: int
    title: str
    template: str
    slides: list[DeckSlide]
    versions: list[DeckVersion] = field(default_factory=list)
    thumbnails: list[str] = field(default_factory=list)
    """Download URLs of one PNG per slide, when the service can draw them."""
    layouts: list[DeckLayout] | None = None
    """On a user's template (`templateFileId`): its layout for each slide kind; None on a
    shipped template."""
    pdf: str | None = None
    """`ready`: the download URL of this version's PDF (also sent as a `file` event)."""
    pdf_error: str | None = None
    """`ready`: why there is no PDF (LibreOffice missing or failing); the deck is still there."""


@dataclass(slots=True)
class QueuedEvent(_Wire):
    """First, when the conversation is busy and the request waits (`enqueue`); its turn's
    events follow in the same stream once the turns before it have ended."""

    __pydantic_config__ = WIRE
    type: Literal["queued"] = field(default="queued", kw_only=True)

    conversation_id: str
    position: int
    """Its place in the conversation's queue when it joined: 1 runs next."""


@dataclass(slots=True)
class ErrorEvent(_Wire):
    """A failure; `code: RETRYING` is a notice and the stream goes on, anything else ends it.

    `message` is our own words, never upstream's: the fixed text of its code,
    or the step that failed and why (a structured step); `detail` is for
    diagnosing it: what was called and what the upstream said (bounded, key scrubbed).
    """

    __pydantic_config__ = WIRE
    type: Literal["error"] = field(default="error", kw_only=True)

    code: str
    message: str
    detail: str = ""
    content: str = ""
    """The same as `message`, for the original client."""

    def __post_init__(self) -> None:
        self.content = self.content or self.message


@dataclass(frozen=True, slots=True)
class ModelSpend(_Wire):
    """What one model of a turn spent (`usage.byModel`)."""

    __pydantic_config__ = _wire_config(optional=("costUsd",))

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: OmittedWhenNone[float] = None


@dataclass(frozen=True, slots=True)
class RunUsage(_Wire):
    __pydantic_config__ = _wire_config(optional=("model", "costUsd", "byModel"))

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    """Some of it was counted locally: a call cut short, or a provider that reported none."""
    model: OmittedWhenNone[str] = None
    """The catalog id of the model that answered (`MODELS`)."""
    cost_usd: OmittedWhenNone[float] = None
    """What the turn cost, every model call summed, where the models' prices are set."""
    by_model: OmittedWhenNone[dict[str, ModelSpend]] = None
    """Per model, when several served the turn (deep research's roles, say)."""


@dataclass(slots=True)
class CompleteEvent(_Wire):
    """Always last, sent once the turn is stored; times in milliseconds."""

    __pydantic_config__ = WIRE
    type: Literal["complete"] = field(default="complete", kw_only=True)

    status: RunStatus
    first_response_time: int | None
    total_response_time: int
    tools: list[str] = field(default_factory=list)
    usage: RunUsage = field(default_factory=RunUsage)


@dataclass(frozen=True, slots=True)
class PlannedTask(_Wire):
    """One task of a research plan as clients draw it."""

    __pydantic_config__ = WIRE

    id: str
    title: str
    depends_on: tuple[str, ...] = ()
    status: StepStatus = "pending"


@dataclass(slots=True)
class PlanEvent(_Wire):
    """A research plan was made (or, on a resumed turn, is shown again as it stands)."""

    __pydantic_config__ = WIRE
    type: Literal["plan"] = field(default="plan", kw_only=True)

    round: int
    tasks: list[PlannedTask]


@dataclass(frozen=True, slots=True)
class SourceLink(_Wire):
    __pydantic_config__ = WIRE

    url: str
    title: str


@dataclass(slots=True)
class StepEvent(_Wire):
    """A research task started, finished (with its summary and sources) or failed."""

    __pydantic_config__ = WIRE
    type: Literal["step"] = field(default="step", kw_only=True)

    task_id: str
    status: StepStatus
    summary: str = ""
    sources: list[SourceLink] = field(default_factory=list)
    """What a finished task read, for a client that shows a task's sources on demand."""


@dataclass(slots=True)
class CritiqueEvent(_Wire):
    """The research checked itself: passed, or what is missing."""

    __pydantic_config__ = WIRE
    type: Literal["critique"] = field(default="critique", kw_only=True)

    round: int
    passed: bool
    feedback: str


@dataclass(slots=True)
class ApprovalEvent(_Wire):
    """The agent waits for the user's yes: a tool call to run (nothing of it has run), or a
    research plan to review. The turn is already stored `paused` with it; `complete{paused}`
    follows, and a stream with the field `approval` answers it."""

    __pydantic_config__ = _wire_config(optional=("toolCallId", "toolName", "plan"))
    type: Literal["approval"] = field(default="approval", kw_only=True)

    approval_id: str
    kind: Literal["tool", "plan"]
    arguments: dict[str, Any] = field(default_factory=dict)
    """The call's arguments as an object (a plan review: `{tasks}`)."""
    tool_call_id: OmittedWhenNone[str] = None
    tool_name: OmittedWhenNone[str] = None
    plan: OmittedWhenNone[list[PlannedTask]] = None
    """A plan review's tasks."""


Event = (
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
    | CritiqueEvent
    | ApprovalEvent
)
"""Every event a run may emit; the order is the schema's."""


@functools.cache
def _union() -> TypeAdapter[Event]:
    return TypeAdapter(Annotated[Event, Field(discriminator="type")])


def encode_data(event: Event) -> bytes:
    """The event's JSON object, compact, UTF-8.

    Through its own class's adapter: a third of the time of the union's, which tries each member.
    """
    data: bytes = _adapter(type(event)).dump_json(event)
    return data


@functools.cache
def _classes() -> dict[str, type]:
    return {kind.__dataclass_fields__["type"].default: kind for kind in Event.__args__}


def decode_event(data: bytes) -> Event:
    """The typed event back from its JSON object (a frame's `data:`).

    Through the class its `type` names, as `encode_data` does, not the union: the frames are
    our own, and the union's adapter costs as much to build as all the classes' together.
    """
    wired = orjson.loads(data)
    event: Event = _adapter(_classes()[wired["type"]]).validate_python(wired)
    return event


def event_schema(ref_template: str) -> dict[str, Any]:
    """The union's JSON schema (a `oneOf` told apart by `type`), its classes under `$defs`."""
    return _union().json_schema(by_alias=True, ref_template=ref_template, mode="serialization")


async def prepare_codecs() -> None:
    """Build every event's adapter, one per loop pass, so no first turn waits for one.

    Building them all takes about half a second: done at import it would delay the
    worker's start, done at first use the first turns of each kind after a restart.
    """
    for kind in Event.__args__:
        _adapter(kind)
        await asyncio.sleep(0)
