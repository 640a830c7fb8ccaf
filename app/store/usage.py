"""What a user's turns spent over a period: tokens and dollars, per model and per agent kind.

Each turn stores its usage per model (`usage_by_model`, migration 0009), so a
turn that several models served (deep research's roles) counts under each;
a turn stored before that has only its totals, counted under its `model`
column (or `unknown`, for turns older still). The period's rows are read in
one statement and summed here: one user's turns over a period are few next
to what one turn costs to answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select

from app.store.db import Database
from app.store.models import AI_SESSION as TURNS
from app.store.records import ModelUsage

UNKNOWN_MODEL = "unknown"
"""Where the turns stored before models were recorded are counted."""


@dataclass(slots=True)
class Spend:
    """Turns and what they spent; `cost_usd` sums the priced ones only."""

    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    estimated: bool = False

    def add(self, usage: ModelUsage, *, turn: bool = True) -> None:
        self.turns += int(turn)
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if usage.cost_usd is not None:
            self.cost_usd = round((self.cost_usd or 0.0) + usage.cost_usd, 8)
        self.estimated = self.estimated or usage.estimated


@dataclass(slots=True)
class UsageReport:
    total: Spend = field(default_factory=Spend)
    by_model: dict[str, Spend] = field(default_factory=dict)
    by_kind: dict[str, Spend] = field(default_factory=dict)


class SqlUsage:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def report(self, user_id: str, start: datetime, end: datetime) -> UsageReport:
        """The user's turns asked in `[start, end)`, summed."""
        by_user = await self._reports(start, end, user_id)
        return by_user.get(user_id, UsageReport())

    async def report_by_user(self, start: datetime, end: datetime) -> dict[str, UsageReport]:
        """Every user's turns asked in `[start, end)`, summed per user (an admin's view)."""
        return await self._reports(start, end, None)

    async def _reports(
        self, start: datetime, end: datetime, user_id: str | None
    ) -> dict[str, UsageReport]:
        query = select(
            TURNS.c.user_id,
            TURNS.c.agent_type,
            TURNS.c.model,
            TURNS.c.prompt_tokens,
            TURNS.c.completion_tokens,
            TURNS.c.cost_usd,
            TURNS.c.usage_by_model,
        ).where(TURNS.c.create_time >= start, TURNS.c.create_time < end)
        if user_id is not None:
            query = query.where(TURNS.c.user_id == user_id)
        async with self._db.statement() as conn:
            rows = (await conn.execute(query)).all()
        reports: dict[str, UsageReport] = {}
        for row in rows:
            report = reports.setdefault(row.user_id, UsageReport())
            spent: list[ModelUsage] = row.usage_by_model or [
                ModelUsage(
                    model=row.model or UNKNOWN_MODEL,
                    prompt_tokens=row.prompt_tokens or 0,
                    completion_tokens=row.completion_tokens or 0,
                    cost_usd=row.cost_usd,
                )
            ]
            whole = _summed(spent)
            report.total.add(whole)
            report.by_kind.setdefault(row.agent_type, Spend()).add(whole)
            for usage in spent:
                report.by_model.setdefault(usage.model, Spend()).add(usage)
        return reports


def _summed(spent: list[ModelUsage]) -> ModelUsage:
    costs = [u.cost_usd for u in spent if u.cost_usd is not None]
    return ModelUsage(
        model="",
        prompt_tokens=sum(u.prompt_tokens for u in spent),
        completion_tokens=sum(u.completion_tokens for u in spent),
        cost_usd=sum(costs) if costs else None,
        estimated=any(u.estimated for u in spent),
    )
