"""`/admin/…`: every user's runs, usage and limits, for the users `ADMIN_USERS` names.

To anyone else, every path here answers 404, as an unknown path does: the
admin surface is not revealed to those who may not use it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from pydantic import Field

from app.api.agent import StopResult, stop_conversation
from app.api.auth import CallerDep
from app.api.deps import ServicesDep
from app.api.envelope import ApiError, Envelope, ok
from app.api.usage import End, Start, UsagePeriod, period
from app.auth import Caller
from app.core.wire import WireModel, WireTime
from app.limits.base import Rates
from app.service.records import LimitOverride, RatedTurn, Rating


async def admin_caller(caller: CallerDep) -> Caller:
    if not caller.admin:
        raise ApiError(404, "Not Found")
    return caller


router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(admin_caller)])

UserId = Annotated[str, Path(min_length=1, max_length=128)]


class AdminRun(WireModel):
    user_id: str
    kind: str
    conversation_id: str
    question: str
    started_at: WireTime
    status: str = Field(description="`running` or `queued`.")
    task_id: str


class StopRun(WireModel):
    user_id: str = Field(min_length=1, max_length=128)
    conversation_id: str = Field(min_length=1, max_length=128)


class UserUsage(WireModel):
    user_id: str
    usage: UsagePeriod


class UserLimits(WireModel):
    """A user's limits; a field left null (or out) in a PUT takes the setting's value."""

    max_streams_per_user: int | None = Field(default=None, ge=0)
    streams_per_minute: int | None = Field(default=None, ge=0)
    uploads_per_minute: int | None = Field(default=None, ge=0)


class UserLimitsPublic(WireModel):
    user_id: str
    limits: UserLimits = Field(description="In force for the user (0: off).")
    overridden: UserLimits = Field(description="What an admin set; null: the setting's.")


@router.get("/runs", summary="Every user's running and queued turns")
async def list_all_runs(services: ServicesDep) -> Envelope[list[AdminRun]]:
    """On any instance, oldest first."""
    tickets = await services.listing.everyones()
    return ok(
        [
            AdminRun(
                user_id=t.user_id,
                kind=t.agent_type,
                conversation_id=t.conversation_id,
                question=t.question,
                started_at=t.started_at,
                status=t.status,
                task_id=t.task_id,
            )
            for t in tickets
        ]
    )


@router.post("/runs/stop", summary="Stop a user's running turn")
async def stop_run(body: StopRun, services: ServicesDep) -> StopResult:
    """As `/agent/stop` does for the user: the run is stored `stopped`, its queue emptied."""
    return await stop_conversation(body.conversation_id, body.user_id, services)


@router.get("/usage", summary="What each user's turns spent over a period")
async def usage_by_user(
    services: ServicesDep, start: Start = None, end: End = None
) -> Envelope[list[UserUsage]]:
    """Users with turns asked in the period, by user id."""
    start, end = period(start, end)
    reports = await services.usage.report_by_user(start, end)
    return ok(
        [
            UserUsage(user_id=user, usage=UsagePeriod.of(start, end, report))
            for user, report in sorted(reports.items())
        ]
    )


@router.get("/ratings", summary="Answers users rated, newest first")
async def list_ratings(
    services: ServicesDep,
    start: Start = None,
    end: End = None,
    rating: Annotated[Rating | None, Query(description="Only these; default: both.")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> Envelope[list[RatedTurn]]:
    """Every user's turns asked in the period that their user rated up or down, with what
    they said: `rating=down` lists what users disliked."""
    start, end = period(start, end)
    return ok(await services.ratings.rated(start, end, rating, limit))


@router.get("/users/{user_id}/limits", summary="A user's limits")
async def read_limits(user_id: UserId, services: ServicesDep) -> Envelope[UserLimitsPublic]:
    return ok(_limits_of(user_id, services))


@router.put("/users/{user_id}/limits", summary="Set a user's limits")
async def set_limits(
    user_id: UserId, body: UserLimits, services: ServicesDep
) -> Envelope[UserLimitsPublic]:
    """Applied at once here, within `REFRESH_SECONDS` (30 s) on the other instances; all
    null: the settings' limits again."""
    await services.limits.set(
        user_id,
        LimitOverride(body.max_streams_per_user, body.streams_per_minute, body.uploads_per_minute),
    )
    return ok(_limits_of(user_id, services))


def _limits_of(user_id: str, services: ServicesDep) -> UserLimitsPublic:
    override = services.limits.overridden().get(user_id, LimitOverride())
    return UserLimitsPublic(
        user_id=user_id,
        limits=_public(services.limits.rates_of(user_id)),
        overridden=UserLimits(
            max_streams_per_user=override.max_streams,
            streams_per_minute=override.streams_per_minute,
            uploads_per_minute=override.uploads_per_minute,
        ),
    )


def _public(rates: Rates) -> UserLimits:
    return UserLimits(
        max_streams_per_user=rates.max_streams,
        streams_per_minute=rates.streams_per_minute,
        uploads_per_minute=rates.uploads_per_minute,
    )
