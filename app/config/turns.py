"""Sections of how turns run: streaming, memory, schedules."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.config.base import SettingsSection

DisconnectPolicy = Literal["continue", "cancel"]


class TurnsSection(SettingsSection):
    """Turns and streams

    How every agent's turn runs and streams.
    """

    sse_ping_seconds: float = Field(default=15.0, gt=0)
    """Seconds between `: ping` comments on a silent stream, so proxies keep the connection."""
    on_disconnect: DisconnectPolicy = "continue"
    """What happens to a run whose client went away: `continue` (the answer is still
    stored, and `/agent/resume` rejoins it) or `cancel` (stopped as a stop would); a
    request's `onDisconnect` wins."""
    memory_max_turns: int = 10
    """Earlier turns of the conversation's active path sent to the model as memory, at
    most."""
    memory_max_tokens: int = 6000
    """Tokens that memory is cut to (within half the model's context window where the
    catalog gives one)."""
    react_max_rounds: int = 5
    """Tool rounds of a ReAct agent (web search, file, host) before a last answer without
    tools."""
    tool_approval: str = ""
    """Tools that wait for the user's yes before they run: `bash,write_file,edit_file`,
    `mcp:*` or `mcp:<server>`, `*` (every tool); empty: only MCP tools their server marks
    `destructiveHint`. A stream's `toolApproval=ask` asks for every acting tool of that turn,
    `=auto` for none not named here (docs/integrate/approvals.md)."""
    recommendations_enabled: bool = True
    """Ask the model for three follow-up questions after each answer (the `recommend`
    event)."""
    tool_result_display_chars: int = 2000
    """Characters of a tool result shown in a `tool_end` event (the model gets all of it)."""


class MemorySection(SettingsSection):
    """Memory

    What the agents keep of each user across conversations: short facts and preferences in
    the user's words, which the user sees and edits (`/memory`, docs/use/memory.md). Each
    turn reads the items most relevant to its question (ranked like documents' passages,
    no model call); a turn's `memory: "off"` and the user's own switch turn it off for a
    turn or for them. Not the conversation's own history (`MEMORY_MAX_TURNS`).
    """

    memory_enabled: bool = True
    """Keep users' memory: off, no turn reads or writes it, the agents get no `remember`
    tool, and `/memory` answers 404 (the page hides its Memory screen and temporary-chat
    switch). The items already kept stay in the database."""
    memory_tokens: int = Field(default=500, ge=0)
    """Tokens of a turn's system prompt given to the user's memory items, the most relevant
    to the question first; items past it are not shown to that turn."""
    memory_max_items: int = Field(default=200, ge=1)
    """Memory items one user may keep (general and in projects together); one more answers
    409, and the `remember` tool tells the model the memory is full."""


class SchedulesSection(SettingsSection):
    """Schedules

    Scheduled runs (`/schedules`, docs/operate/schedules.md): each instance runs a clock that
    claims what is due in the database (one row per schedule and due time, so each due time
    runs once across every instance) and starts it as an ordinary turn of the schedule's
    owner, counted against the owner's limits.
    """

    schedules_per_user: int = Field(default=20, ge=0)
    """Schedules one user may have; one more answers 400 with the reason. 0: no limit."""
    schedule_min_seconds: float = Field(default=900.0, ge=0)
    """Shortest time a schedule may leave between two runs, over its next few dozen due
    times; a recurrence with a shorter gap answers 400 with the reason."""
    schedule_max_failures: int = Field(default=3, ge=0)
    """Failed runs in a row after which a schedule pauses itself and says why
    (`pausedReason`); 0: never."""
    schedule_catch_up: Literal["one", "none"] = "one"
    """Due times missed while no instance ran: `one` run (the latest of them), or `none` (a
    due time later than a minute, or three `SCHEDULE_POLL_SECONDS`, is passed over)."""
    schedule_poll_seconds: float = Field(default=10.0, gt=0)
    """Longest each instance's schedule clock sleeps: it wakes sooner at a due time it knows
    of, and at once for a schedule made or changed on it; a schedule made on another
    instance is seen within this."""
