"""MCP tools beside the agents': `list_schedules` and `create_schedule` (API.md "Schedules").

So an MCP client (an assistant in an editor, another agent) can set up "every
weekday at 8, research X" and see what is set up, as the caller, with the same
checks as `POST /schedules`: its arguments are that body, validated by the same
model, and a refusal is a tool error the model can read and fix. Changing,
pausing and deleting stay on the HTTP API and the page.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from pydantic import ValidationError

from app.api.schedules import NewSchedule, SchedulePublic
from app.service.errors import TurnRefused
from app.service.schedules import ScheduleService

LIST = "list_schedules"
CREATE = "create_schedule"
NAMES = frozenset({LIST, CREATE})

_CREATE_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "description": "The agent that answers: chat, deep, …"},
        "query": {"type": "string", "minLength": 1, "description": "The question each run asks."},
        "rrule": {
            "type": "string",
            "description": "An RFC 5545 RRULE, e.g. FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;"
            "BYMINUTE=0 (or give cron).",
        },
        "cron": {"type": "string", "description": "Five fields: minute hour day month weekday."},
        "timezone": {"type": "string", "description": "An IANA zone, e.g. Europe/Paris."},
        "model": {
            "type": "string",
            "description": "A model id of GET /agent/models; omitted: the project's default,"
            " else the agent's.",
        },
        "projectId": {
            "type": "string",
            "description": "A project (GET /projects) to run in: its instructions, files and"
            " memory apply to every run.",
        },
        "conversation": {
            "type": "string",
            "enum": ["new", "same"],
            "description": "`new`: each run in a new conversation; `same`: one conversation.",
        },
        "name": {"type": "string", "description": "What the schedule is called."},
        "enabled": {"type": "boolean", "description": "false: made paused."},
    },
    "required": ["kind", "query"],
    "additionalProperties": False,
}


def schedule_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name=LIST,
            title="Schedules",
            description="The caller's scheduled runs: what each asks, when, and how the last"
            " run went.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        ),
        types.Tool(
            name=CREATE,
            title="Schedule a run",
            description="Ask an agent a question on a recurrence (each run an ordinary turn,"
            " in the history). Give rrule or cron, and a timezone.",
            input_schema=_CREATE_INPUT,
        ),
    ]


async def call_schedule_tool(
    name: str, arguments: dict[str, Any], user: str, schedules: ScheduleService
) -> types.CallToolResult:
    try:
        if name == LIST:
            shown = [SchedulePublic.of(view) for view in await schedules.listed(user)]
            lines = [_line(schedule) for schedule in shown] or ["No schedules."]
            return _result("\n".join(lines), {"schedules": [s.wire() for s in shown]})
        body = NewSchedule.model_validate(arguments)
        made = SchedulePublic.of(await schedules.create(user, body.draft()))
        return _result(f"Scheduled: {_line(made)}", made.wire())
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        return _error(f"{where}: {error['msg']}")
    except TurnRefused as exc:
        return _error(str(exc))


def _line(schedule: SchedulePublic) -> str:
    when = schedule.rrule or schedule.cron
    state = ", ".join(schedule.next_runs) if schedule.enabled else "paused"
    return f"{schedule.name} ({schedule.kind}, {when}, {schedule.timezone}): {state}"


def _result(text: str, structured: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
