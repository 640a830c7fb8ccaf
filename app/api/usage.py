"""`GET /usage`: what the caller's turns spent over a period, per model and per agent kind.

Tokens are the providers' counts where they reported them, tiktoken's where
they did not (`estimated`); dollars come from each model's prices in `MODELS`
and are left out (`costUsd: null`) where no price is set.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Query
from pydantic import Field

from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.envelope import ApiError, Envelope, ok
from app.core.wire import WireModel, WireTime

if TYPE_CHECKING:
    from app.store.usage import Spend, UsageReport

router = APIRouter(tags=["usage"])

DEFAULT_PERIOD = timedelta(days=30)
_EARLIEST = datetime.min.replace(tzinfo=UTC)


class SpendRecord(WireModel):
    turns: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None = Field(description="Dollars at the models' prices; null: none set.")
    estimated: bool = Field(description="Some tokens were counted locally (tiktoken).")

    @classmethod
    def of(cls, spend: Spend) -> SpendRecord:
        return cls(
            turns=spend.turns,
            prompt_tokens=spend.prompt_tokens,
            completion_tokens=spend.completion_tokens,
            cost_usd=spend.cost_usd,
            estimated=spend.estimated,
        )


class UsagePeriod(WireModel):
    start: WireTime = Field(serialization_alias="from")
    end: WireTime = Field(serialization_alias="to")
    total: SpendRecord
    by_model: dict[str, SpendRecord] = Field(description="By model id (`MODELS`).")
    by_kind: dict[str, SpendRecord] = Field(description="By agent kind.")

    @classmethod
    def of(cls, start: datetime, end: datetime, report: UsageReport) -> UsagePeriod:
        return cls(
            start=start,
            end=end,
            total=SpendRecord.of(report.total),
            by_model={k: SpendRecord.of(v) for k, v in sorted(report.by_model.items())},
            by_kind={k: SpendRecord.of(v) for k, v in sorted(report.by_kind.items())},
        )


Start = Annotated[
    datetime | None,
    Query(
        alias="from",
        description="ISO date or time (UTC unless it says); default: 30 days before `to`.",
    ),
]
End = Annotated[
    datetime | None, Query(alias="to", description="ISO date or time, excluded; default: now.")
]


def period(start: datetime | None, end: datetime | None) -> tuple[datetime, datetime]:
    """`from` and `to` as asked, defaults filled in; 422 unless `from` comes first."""
    try:
        end = _aware(end) if end is not None else datetime.now(UTC)
        earliest_end = _EARLIEST + DEFAULT_PERIOD
        start = _aware(start) if start is not None else max(end, earliest_end) - DEFAULT_PERIOD
    except OverflowError as exc:  # a time near year 1 or 9999 moved to UTC
        raise ApiError(422, "from and to must lie between the years 1 and 9999 in UTC") from exc
    if start >= end:
        raise ApiError(422, "from must be before to")
    return start, end


@router.get("/usage", summary="What your turns spent over a period")
async def usage(
    user: UserDep, services: ServicesDep, start: Start = None, end: End = None
) -> Envelope[UsagePeriod]:
    """The caller's turns asked from `from` up to `to`: totals, per model, per agent kind."""
    start, end = period(start, end)
    return ok(UsagePeriod.of(start, end, await services.usage.report(user, start, end)))


def _aware(moment: datetime) -> datetime:
    """A time without a zone is UTC, as every time the service stores."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
