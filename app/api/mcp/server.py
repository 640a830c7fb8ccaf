"""The MCP server behind `/mcp`: a tool per agent kind, each call one ordinary turn (and the
schedules' two tools, `schedule_tools.py`).

A call is a turn started through `StreamService.open`, the path every
stream takes (checks, limits, the claim, the stored question), so it is in
the history like any other and `/agent/stop` reaches it. The handler reads
the run's log to its end: the answer's text is the result, generated files
are resource links to `/file/download/…`, the sources a numbered list, and
the structured content names the conversation and turn (to continue, or to
read later). While it runs, each line of the agent's `thinking` (and each
tool it calls) is a progress notification, when the client asked for them.

Cancellation: `notifications/cancelled` for a call (the 2025 revisions), or
the client closing the call's response stream (2026-07-28, where that is the
cancellation) stops the run, stored `stopped`. A connection that merely drops
under a 2025-revision call does not reach the handler: the run goes on and
its answer lands in the history, as our streams' runs do.

Left out: the MCP tasks extension (a call is answered when its turn ends; a
client that cannot wait that long polls the run: docs/integrate/mcp.md, "Long calls").
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from app.agents.registry import AgentEntry
from app.api.deps import Services, public_base_url
from app.api.mcp import CALLER_KEY
from app.api.mcp.schedule_tools import NAMES as SCHEDULE_TOOLS
from app.api.mcp.schedule_tools import call_schedule_tool, schedule_tools
from app.api.run_events import event_batches
from app.core import events as ev
from app.core.urls import absolute
from app.service.errors import TurnRefused
from app.service.streams import CONVERSATION_ID, MemoryMode, TurnRequest

if TYPE_CHECKING:
    from app.tasks.runs import Run

log = logging.getLogger(__name__)

SERVER_NAME = "dodo-agent"
_FAILED = ("failed", "interrupted")
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "conversationId": {
            "type": "string",
            "description": "The conversation: pass it to the next call to continue it.",
        },
        "turnId": {"type": "integer", "description": "The stored turn (`messages[].id`)."},
        "status": {
            "type": "string",
            "enum": ["completed", "stopped", "failed", "paused", "interrupted"],
            "description": "`paused`: the agent asks something; the next call answers it.",
        },
    },
    "required": ["conversationId", "turnId", "status"],
}


class ToolInput(BaseModel):
    """A call's arguments, as the tools' input schema lists them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    query: str
    conversation_id: str | None = Field(default=None, alias="conversationId")
    file_id: str | None = Field(default=None, alias="fileId")
    model: str | None = None
    project_id: str | None = Field(default=None, alias="projectId", max_length=64)
    memory: MemoryMode | None = None


def input_schema(entry: AgentEntry) -> dict[str, Any]:
    """The kind's tool input: `query`, `conversationId`, `model`, `projectId`, `memory`;
    `fileId` where it reads one."""
    properties: dict[str, Any] = {
        "query": {"type": "string", "minLength": 1, "description": "The question or request."},
        "conversationId": {
            "type": "string",
            "pattern": f"^{CONVERSATION_ID.pattern}$",
            "description": (
                "Continue this conversation (the structuredContent of an earlier call);"
                " omitted: a new one. A new id of your own choosing starts one under it."
            ),
        },
        "model": {
            "type": "string",
            "description": "A model id of GET /agent/models; omitted: the agent's default.",
        },
        "projectId": {
            "type": "string",
            "description": (
                "A project (GET /projects) to start the new conversation in: its instructions,"
                " files and defaults apply; later calls on the conversation stay in it."
            ),
        },
        "memory": {
            "type": "string",
            "enum": ["on", "off"],
            "description": "`off`: this turn neither reads nor writes the user's memory.",
        },
    }
    required = ["query"]
    if entry.accepts_file or entry.needs_file:
        properties["fileId"] = {
            "type": "string",
            "description": "An uploaded file (POST /file/upload) the agent reads.",
        }
        if entry.needs_file:
            required.append("fileId")
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


@dataclass(slots=True)
class TurnResult:
    """A call's turn as its events arrive: the progress lines to send, the result at its end."""

    base_url: str
    start: ev.StartEvent | None = None
    complete: ev.CompleteEvent | None = None
    answer: list[str] = field(default_factory=list)
    files: list[ev.FileEvent] = field(default_factory=list)
    references: list[ev.Reference] = field(default_factory=list)
    error: ev.ErrorEvent | None = None
    approval: ev.ApprovalEvent | None = None
    _thinking: str = ""

    def take(self, event: ev.Event) -> list[str]:
        """Keep what the result needs of `event`; the progress lines it completes."""
        if isinstance(event, ev.ThinkingEvent):
            *lines, self._thinking = (self._thinking + event.content).split("\n")
            return [line.strip() for line in lines if line.strip()]
        lines = self.flush()
        match event:
            case ev.StartEvent():
                self.start = event
            case ev.TextEvent():
                self.answer.append(event.content)
            case ev.FileEvent():
                self.files.append(event)
            case ev.ReferenceEvent():
                self.references = event.references()
            case ev.ErrorEvent() if event.code != "RETRYING":
                self.error = event
            case ev.ApprovalEvent():
                self.approval = event
            case ev.ToolStartEvent():
                lines.append(f"Calling {event.tool_name}")
            case ev.CompleteEvent():
                self.complete = event
        return lines

    def flush(self) -> list[str]:
        """The thinking line not yet ended by a newline, as a line of its own."""
        line, self._thinking = self._thinking.strip(), ""
        return [line] if line else []

    def result(self) -> types.CallToolResult:
        status = self.complete.status if self.complete is not None else "failed"
        text = "".join(self.answer).strip()
        if status in _FAILED:
            reason = self.error.message if self.error is not None else "The turn failed"
            text = f"{text}\n\n{reason}".strip()
        elif status == "stopped":
            text = f"{text}\n\n(Stopped.)".strip()
        elif status == "paused" and self.approval is not None:
            what = self.approval.tool_name or "its research plan"
            text += (
                f"\n\n(The agent waits for approval of {what}, which has not run: decide on"
                " another surface, or call again with this conversationId to decline it with"
                " your message.)"
            )
        elif status == "paused":
            text += "\n\n(The agent waits for your answer: call again with this conversationId.)"
        unmade = [f"{file.name}: {file.error}" for file in self.files if file.status == "failed"]
        if unmade:
            text = "\n\n".join([text, *unmade]).strip()
        content: list[types.ContentBlock] = [types.TextContent(text=text)]
        if self.references:
            listed = "\n".join(
                f"[{n}] {r.title or r.url}: {absolute(r.url, self.base_url)}"
                for n, r in enumerate(self.references, 1)
            )
            content.append(types.TextContent(text=f"Sources:\n{listed}"))
        content.extend(
            types.ResourceLink(
                uri=absolute(file.url, self.base_url),
                name=file.name,
                mime_type=file.mime_type,
                size=file.size,
            )
            for file in self.files
            if file.status != "failed"
        )
        structured = None
        if self.start is not None:
            structured = {
                "conversationId": self.start.conversation_id,
                "turnId": self.start.row_id,
                "status": status,
            }
        return types.CallToolResult(
            content=content, structured_content=structured, is_error=status in _FAILED
        )


class AgentTools:
    """The tools/list and tools/call handlers over the app's services."""

    def __init__(self, services: Callable[[], Services], entries: Sequence[AgentEntry]) -> None:
        self._services = services
        self._entries = {entry.kind: entry for entry in entries}

    def _available(self) -> list[AgentEntry]:
        running = self._services().turns.kinds()
        return [entry for entry in self._entries.values() if entry.kind in running]

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                *(
                    types.Tool(
                        name=entry.kind,
                        title=entry.name,
                        description=entry.description or entry.summary,
                        input_schema=input_schema(entry),
                        output_schema=OUTPUT_SCHEMA,
                    )
                    for entry in self._available()
                ),
                *schedule_tools(),
            ]
        )

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name in SCHEDULE_TOOLS:
            caller = _http_request(ctx).scope["state"][CALLER_KEY]
            return await call_schedule_tool(
                params.name, params.arguments or {}, caller.user, self._services().schedules
            )
        entry = self._entries.get(params.name)
        if entry is None or entry not in self._available():
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        try:
            arguments = ToolInput.model_validate(params.arguments or {})
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "arguments"
            return _refusal(f"{where}: {error['msg']}")
        request = _http_request(ctx)
        services = self._services()
        turn = TurnRequest(
            arguments.query,
            arguments.conversation_id,
            arguments.file_id,
            model=arguments.model,
            project_id=arguments.project_id,
            memory=arguments.memory,
        )
        try:
            caller = request.scope["state"][CALLER_KEY]
            run, _ = await services.streams.open(entry, turn, caller.user, caller.limit_key)
        except TurnRefused as exc:
            return _refusal(str(exc))
        try:
            return await self._follow(ctx, run, TurnResult(public_base_url(request, services)))
        except anyio.get_cancelled_exc_class():
            if _cancelled_by_client(ctx):
                run.stop("stopped")
            raise

    async def _follow(
        self, ctx: ServerRequestContext[Any, Any], run: Run, turn: TurnResult
    ) -> types.CallToolResult:
        """Read the run to its end, telling the client its progress lines as they come."""
        sent = 0
        async with contextlib.aclosing(event_batches(run.log, 0)) as batches:
            async for batch in batches:
                lines: list[str] = []
                for event in batch:
                    if isinstance(event, ev.StartEvent):
                        lines.append(f"Turn {event.row_id} of conversation {event.conversation_id}")
                    lines.extend(turn.take(event))
                for line in lines:
                    sent += 1
                    await ctx.session.report_progress(sent, None, line)
        return turn.result()


def _refusal(message: str) -> types.CallToolResult:
    """A call the service refused before any turn began: an error the model can read and fix."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _http_request(ctx: ServerRequestContext[Any, Any]) -> Request:
    """The HTTP request that carried the call (the streamable HTTP transport hands it over)."""
    request = ctx.request
    if not isinstance(request, Request):
        raise MCPError(types.INTERNAL_ERROR, "The call came without its HTTP request")
    return request


def _cancelled_by_client(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client cancelled this call, rather than its session closing or the server
    shutting down.

    At 2026-07-28 a call is cancelled by closing its response stream, the only way its
    handler is cancelled but shutdown. Before it, `notifications/cancelled` sets the
    request's `cancel_requested`; the SDK (2.3) hands lowlevel handlers no public way to
    it (only `mcp.shared.context.BaseContext` exposes it, and the runner builds none), so it
    is read from the session's request channel. tests/integration/test_mcp_server.py
    fails if that changes.
    """
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return True
    channel = getattr(ctx.session, "_request_outbound", None)
    requested = getattr(channel, "cancel_requested", None)
    return isinstance(requested, anyio.Event) and requested.is_set()


class McpServer:
    """The SDK's lowlevel server and its session manager, run by a task of their own.

    The manager's task group must be left by the task that entered it, so it
    is entered by a task that lives as long as the server, not by the request
    that built it.
    """

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self._manager = manager
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls, services: Callable[[], Services], entries: Sequence[AgentEntry]
    ) -> McpServer:
        tools = AgentTools(services, entries)
        server: Server[Any] = Server(
            SERVER_NAME,
            version="0.1.0",
            instructions=(
                "Each tool is one of the service's agents; a call is one turn of a"
                " conversation. Pass the conversationId of a call's structuredContent to"
                " continue it."
            ),
            on_list_tools=tools.list_tools,
            on_call_tool=tools.call_tool,
        )
        # Keys and limits are the app's (the endpoint, the turn service), not the SDK's.
        manager = StreamableHTTPSessionManager(app=server)
        served = cls(manager)
        ready = asyncio.Event()
        # An empty context: the manager's sessions are not part of the first request's trace.
        served._task = asyncio.create_task(
            served._run(ready), name="mcp-server", context=contextvars.Context()
        )
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait({waiting, served._task}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if served._task.done():
            served._task.result()
        return served

    async def _run(self, ready: asyncio.Event) -> None:
        async with self._manager.run():
            ready.set()
            await self._stop.wait()

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._manager.handle_request(scope, receive, send)

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
