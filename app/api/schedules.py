"""`/schedules`: questions asked of an agent on a recurrence (API.md "Schedules").

Each user reaches only their own schedules (another user's id answers 404);
admins list every user's and pause any under `/admin/schedules`, which
answers 404 to everyone else, as the rest of `/admin` does. What is checked
and how a run goes is the service's (app/service/schedules.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Path
from pydantic import Field, model_validator

from app.api.admin import admin_caller
from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.envelope import Envelope, ok
from app.core.wire import WireModel, WireTime
from app.service.schedules import ScheduleDraft, ScheduleView

if TYPE_CHECKING:
    from app.store.schedules import RunRecord

router = APIRouter(prefix="/schedules", tags=["schedules"])
admin_router = APIRouter(
    prefix="/admin/schedules", tags=["admin"], dependencies=[Depends(admin_caller)]
)

ScheduleId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]
Conversation = Literal["new", "same"]
_REQUIRED = ("kind", "query", "conversation", "enabled")
"""Fields a change may leave out but not set to null."""


class ScheduleFields(WireModel):
    """What a schedule is made of; every field of a change (PATCH) may be left out."""

    kind: str | None = Field(
        default=None, max_length=32, description="The agent that answers (`/agent/kinds`)."
    )
    query: str | None = Field(default=None, description="The question asked at each run.")
    rrule: str | None = Field(
        default=None,
        max_length=2000,
        description="An RFC 5545 RRULE (`FREQ=DAILY;BYHOUR=8;BYMINUTE=0`), optionally after a"
        " `DTSTART;TZID=…:` line; or `cron`.",
    )
    cron: str | None = Field(
        default=None, max_length=128, description="Five fields: minute hour day month weekday."
    )
    timezone: str | None = Field(
        default=None,
        max_length=64,
        description="An IANA zone its times are wall-clock times of; default: the RRULE's"
        " DTSTART zone, else UTC.",
    )
    model: str | None = Field(
        default=None,
        max_length=64,
        description="The model id (`/agent/models`); null: the project's `defaultModel`, else"
        " the default.",
    )
    project_id: str | None = Field(
        default=None,
        max_length=64,
        description="A project (`/projects`) its runs are in: its instructions, files, memory"
        " and `defaultModel` apply; another user's or an unknown one: 404.",
    )
    conversation: Conversation | None = Field(
        default=None,
        description="`new`: each run in a new conversation (default); `same`: every run in"
        " the schedule's own, one after the other.",
    )
    webhook_url: str | None = Field(
        default=None,
        max_length=2048,
        description="Called (signed POST) when each run ends; default: WEBHOOK_URL.",
    )
    enabled: bool | None = Field(default=None, description="false: paused.")
    name: str | None = Field(
        default=None, max_length=200, description="Default: the question, cut to 100 characters."
    )

    @model_validator(mode="after")
    def _no_null_where_required(self) -> ScheduleFields:
        named = [f for f in _REQUIRED if f in self.model_fields_set and getattr(self, f) is None]
        if named:
            raise ValueError(f"{', '.join(named)} may not be null")
        return self

    def changes(self) -> dict[str, Any]:
        """The fields the request named, by the service's names."""
        return {name: getattr(self, name) for name in self.model_fields_set}


class NewSchedule(ScheduleFields):
    kind: str = Field(max_length=32, description="The agent that answers (`/agent/kinds`).")
    query: str = Field(description="The question asked at each run.")

    def draft(self) -> ScheduleDraft:
        return ScheduleDraft(
            kind=self.kind,
            query=self.query,
            rrule=self.rrule,
            cron=self.cron,
            timezone=self.timezone,
            model=self.model,
            project_id=self.project_id,
            conversation=self.conversation or "new",
            webhook_url=self.webhook_url,
            enabled=True if self.enabled is None else self.enabled,
            name=self.name,
        )


class Pause(WireModel):
    enabled: bool = Field(description="false: pause it; true: let it run again.")


class RunPublic(WireModel):
    run_id: str
    schedule_id: str
    trigger: Literal["schedule", "now"] = Field(
        description="`schedule`: its due time; `now`: a run asked for (`POST …/run`)."
    )
    due_time: str = Field(description="ISO 8601, with the offset of the schedule's zone.")
    start_time: WireTime | None = Field(description="When its turn began; null: none did.")
    conversation_id: str | None
    turn_id: int | None = Field(description="The turn it began (`messages[].id`).")
    status: str = Field(
        description="Its turn's: `running`, `completed`, `failed`, `stopped`, `paused`,"
        " `interrupted` (`deleted`: the turn was deleted since); before a turn, or when none"
        " began: `starting`, `skipped` (its conversation was busy), `failed` (refused),"
        " `interrupted` (its instance stopped first)."
    )
    reason: str | None = Field(description="Why it was skipped, failed or interrupted.")

    @classmethod
    def of(cls, record: RunRecord, zone: str) -> RunPublic:
        run = record.run
        return cls(
            run_id=run.id,
            schedule_id=run.schedule_id,
            trigger="now" if run.trigger == "now" else "schedule",
            due_time=_in_zone(run.due_time, zone),
            start_time=run.start_time,
            conversation_id=run.conversation_id,
            turn_id=run.turn_id,
            status=record.status,
            reason=record.reason,
        )


class SchedulePublic(WireModel):
    schedule_id: str
    name: str
    kind: str
    query: str
    rrule: str | None
    cron: str | None
    timezone: str
    model: str | None
    project_id: str | None
    conversation: Conversation
    conversation_id: str | None = Field(description="A `same` schedule's conversation.")
    webhook_url: str | None
    enabled: bool
    paused_reason: str | None = Field(
        description="Why it paused itself (failed runs in a row) or an admin paused it."
    )
    next_runs: list[str] = Field(
        description="Its next three due times, ISO 8601 with its zone's offset; none while paused."
    )
    last_run: RunPublic | None
    create_time: WireTime
    update_time: WireTime

    @classmethod
    def of(cls, view: ScheduleView) -> SchedulePublic:
        return cls.model_validate(_public(view))


class AdminSchedulePublic(SchedulePublic):
    user_id: str

    @classmethod
    def of(cls, view: ScheduleView) -> AdminSchedulePublic:
        return cls.model_validate({**_public(view), "user_id": view.schedule.user_id})


@router.post("", summary="Make a schedule")
async def create_schedule(
    body: NewSchedule, user: UserDep, services: ServicesDep
) -> Envelope[SchedulePublic]:
    """400 with the reason for a bad rule or zone, an interval under SCHEDULE_MIN_SECONDS, more
    than SCHEDULES_PER_USER schedules, or a webhook that may not be called; `MODEL_UNKNOWN`
    as on a stream; 404 for a `projectId` not the caller's."""
    return ok(SchedulePublic.of(await services.schedules.create(user, body.draft())))


@router.get("", summary="The caller's schedules, newest first")
async def list_schedules(user: UserDep, services: ServicesDep) -> Envelope[list[SchedulePublic]]:
    return ok([SchedulePublic.of(view) for view in await services.schedules.listed(user)])


@router.get("/{schedule_id}", summary="One schedule")
async def read_schedule(
    schedule_id: ScheduleId, user: UserDep, services: ServicesDep
) -> Envelope[SchedulePublic]:
    return ok(SchedulePublic.of(await services.schedules.get(user, schedule_id)))


@router.patch("/{schedule_id}", summary="Change a schedule (`enabled: false` pauses it)")
async def change_schedule(
    schedule_id: ScheduleId, body: ScheduleFields, user: UserDep, services: ServicesDep
) -> Envelope[SchedulePublic]:
    """Only the fields given change; giving `rrule` drops `cron` and the other way round. A
    new rule or zone counts from now; enabling it again runs nothing it missed."""
    view = await services.schedules.update(user, schedule_id, body.changes())
    return ok(SchedulePublic.of(view))


@router.delete("/{schedule_id}", summary="Delete a schedule")
async def delete_schedule(
    schedule_id: ScheduleId, user: UserDep, services: ServicesDep
) -> Envelope[None]:
    """Its runs' conversations stay."""
    await services.schedules.delete(user, schedule_id)
    return ok(None)


@router.post("/{schedule_id}/run", summary="Run it now, beside its own times")
async def run_schedule_now(
    schedule_id: ScheduleId, user: UserDep, services: ServicesDep
) -> Envelope[RunPublic]:
    """A paused schedule too; answers the run as it started (or was skipped or refused)."""
    view = await services.schedules.get(user, schedule_id)
    record = await services.schedules.run_now(user, schedule_id)
    return ok(RunPublic.of(record, view.schedule.timezone))


@router.get("/{schedule_id}/runs", summary="Its runs, newest first")
async def list_schedule_runs(
    schedule_id: ScheduleId, user: UserDep, services: ServicesDep
) -> Envelope[list[RunPublic]]:
    view = await services.schedules.get(user, schedule_id)
    records = await services.schedules.runs(user, schedule_id)
    return ok([RunPublic.of(record, view.schedule.timezone) for record in records])


@admin_router.get("", summary="Every user's schedules")
async def list_all_schedules(services: ServicesDep) -> Envelope[list[AdminSchedulePublic]]:
    return ok([AdminSchedulePublic.of(view) for view in await services.schedules.listed(None)])


@admin_router.patch("/{schedule_id}", summary="Pause or resume any user's schedule")
async def pause_any_schedule(
    schedule_id: ScheduleId, body: Pause, services: ServicesDep
) -> Envelope[AdminSchedulePublic]:
    """Paused here, it says so in `pausedReason`, for its owner to see."""
    view = await services.schedules.set_enabled(
        schedule_id, body.enabled, "Paused by an administrator"
    )
    return ok(AdminSchedulePublic.of(view))


def _public(view: ScheduleView) -> dict[str, Any]:
    row = view.schedule
    last = view.last_run
    return {
        "schedule_id": row.id,
        "name": row.name,
        "kind": row.kind,
        "query": row.query,
        "rrule": row.rrule,
        "cron": row.cron,
        "timezone": row.timezone,
        "model": row.model,
        "project_id": row.project_id,
        "conversation": row.conversation,
        "conversation_id": row.conversation_id if row.conversation == "same" else None,
        "webhook_url": row.webhook_url,
        "enabled": row.enabled,
        "paused_reason": row.paused_reason,
        "next_runs": [moment.isoformat(timespec="seconds") for moment in view.next_runs],
        "last_run": None if last is None else RunPublic.of(last, row.timezone),
        "create_time": row.create_time,
        "update_time": row.update_time,
    }


def _in_zone(moment: datetime, zone: str) -> str:
    return moment.astimezone(ZoneInfo(zone)).isoformat(timespec="seconds")
