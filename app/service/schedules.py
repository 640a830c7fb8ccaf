"""Schedules: a question asked of an agent on a recurrence, each run an ordinary turn of its owner.

Every surface (the HTTP routes, MCP's tools) makes and reads schedules here,
and the clock (app/tasks/schedule_clock.py) hands each due time it claimed
to `start_run`: the run is opened through `StreamService`, as a stream's
turn is (checked, limited, listed in `/agent/runs`, stored, its webhook
called), with no client (`onDisconnect=continue`). Its conversation is a
new one each time, or the schedule's own (`same`). A run on a `same`
conversation that is still busy with the previous run, or waits for the
user's answer there (a paused turn: a new message would be taken as the
answer), is `skipped`, not queued: a late run of a periodic question is
one the next due time makes again, and queued ones would pile up behind
a run slower than the schedule.

A schedule in a project (`projectId`, checked as a stream's: another user's
or an unknown one is not found) runs its turns in it: the project's
instructions, files and memory, and its `defaultModel` when the schedule
names no model (read at each run, so a change to the project applies to the
next). `kind` is required of a schedule, so the project's `defaultKind` does
not apply. A `same` schedule's conversation follows the schedule when its
project changes. Deleting a project deletes its schedules (app/service/projects.py).

A schedule is checked as a stream's request is (the kind, the model, the
webhook, the question's length, the project), and its times: an RRULE or
cron in its zone, no two of its next few dozen due times closer than
`SCHEDULE_MIN_SECONDS`, at most `SCHEDULES_PER_USER` a user. Refusals are
`app.service.errors`.

`SCHEDULE_MAX_FAILURES` failed runs in a row pause the schedule with the
reason, checked when a run ends on this instance or fails to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from app.agents.registry import AgentEntry
from app.config import SettingsPart
from app.core.drain import Drain
from app.core.recurrence import (
    Recurrence,
    RecurrenceError,
    format_wall,
    parse_wall,
)
from app.llm.models import ModelCatalog, UnknownModel
from app.service.errors import (
    BadRequest,
    Busy,
    Draining,
    ModelUnknown,
    NotAvailable,
    NotFound,
    TooLong,
    TurnRefused,
    Unavailable,
)
from app.service.projects import ProjectService
from app.service.streams import StreamService, TurnRequest
from app.service.turns import DRAINING, DRAINING_RETRY_SECONDS
from app.store.base import StoreError, TurnStore
from app.store.schedule_models import RunState, ScheduleRow, ScheduleRunRow
from app.store.schedules import RunRecord, SqlSchedules, new_id
from app.tasks.base import DeadInstances
from app.tasks.runs import Run
from app.tasks.schedule_clock import ClockSettings, ScheduleClock, utc_now
from app.tasks.webhooks import WebhookRefused, Webhooks

log = logging.getLogger(__name__)

ConversationMode = Literal["new", "same"]
NEXT_RUNS = 3
"""Due times a schedule shows (`nextRuns`)."""
GAP_SAMPLE = 36
"""Due times whose gaps are checked against `SCHEDULE_MIN_SECONDS`."""
LIST_LIMIT = 500
"""Most schedules one list answers (a user has `SCHEDULES_PER_USER`; admins see all)."""
RUNS_LIMIT = 100
STILL_GOING = "the previous run in its conversation was still going"
WAITING = "its conversation waits for your answer to the previous run"
_NAME_CHARS = 100


class ScheduleSettings(SettingsPart):
    schedules_per_user: int
    schedule_min_seconds: float
    schedule_max_failures: int
    query_max_chars: int


RunStarted = Callable[[Run, str, str], None]
"""Told of each run started (its turn's run, the owner, the conversation): A2A push."""


@dataclass(frozen=True, slots=True)
class ScheduleDraft:
    """A schedule as a user writes it: everything but what the service keeps."""

    kind: str
    query: str
    rrule: str | None = None
    cron: str | None = None
    timezone: str | None = None
    """None: the RRULE's DTSTART zone, else UTC."""
    model: str | None = None
    project_id: str | None = None
    conversation: ConversationMode = "new"
    webhook_url: str | None = None
    enabled: bool = True
    name: str | None = None
    """None: the question, cut to 100 characters."""


@dataclass(frozen=True, slots=True)
class ScheduleView:
    """A schedule as it is answered: its row, its next due times (aware, in its zone) and its
    newest run."""

    schedule: ScheduleRow
    next_runs: list[datetime]
    last_run: RunRecord | None


class ScheduleService:
    """Built once in the lifespan; `start()` its clock once turns can start, `close()` first."""

    def __init__(
        self,
        settings: ScheduleSettings,
        *,
        clock_settings: ClockSettings,
        store: SqlSchedules,
        streams: StreamService,
        sessions: TurnStore,
        agents: Mapping[str, AgentEntry],
        models: ModelCatalog,
        webhooks: Webhooks,
        projects: ProjectService,
        instance_id: str,
        instances: DeadInstances | None,
        drain: Drain,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self._settings = settings
        self._store = store
        self._streams = streams
        self._sessions = sessions
        self._agents = agents
        self._models = models
        self._webhooks = webhooks
        self._instance_id = instance_id
        self._projects = projects
        self._drain = drain
        self._now = now
        self._watching: set[asyncio.Task[None]] = set()
        self.on_started: RunStarted | None = None
        self.clock = ScheduleClock(
            store, self.start_run, clock_settings, instance_id, instances, drain, now
        )

    def start(self) -> None:
        self.clock.start()

    async def close(self) -> None:
        await self.clock.close()
        for task in self._watching:
            task.cancel()
        await asyncio.gather(*self._watching, return_exceptions=True)

    async def create(self, user_id: str, draft: ScheduleDraft) -> ScheduleView:
        now = self._now()
        schedule_id = new_id()
        row = ScheduleRow(
            id=schedule_id,
            user_id=user_id,
            conversation_id=f"schedule-{schedule_id}",
            create_time=now,
            update_time=now,
            **_placeholder(),
        )
        row = await self._checked(row, draft, now, new_series=True)
        if not await self._store.create(row, self._settings.schedules_per_user):
            raise BadRequest(
                f"You have {self._settings.schedules_per_user} schedules, the most a user may"
                " have: delete one first"
            )
        self.clock.wake()
        return await self._view(row)

    async def get(self, user_id: str | None, schedule_id: str) -> ScheduleView:
        return await self._view(await self._owned(user_id, schedule_id))

    async def listed(self, user_id: str | None) -> list[ScheduleView]:
        """The user's schedules (every user's: None), newest first."""
        rows = await self._store.listed(user_id, LIST_LIMIT)
        last = await self._store.last_runs(row.id for row in rows)
        times = await asyncio.to_thread(lambda: [_next_runs(row) for row in rows])
        return [
            ScheduleView(row, when, last.get(row.id)) for row, when in zip(rows, times, strict=True)
        ]

    async def update(
        self, user_id: str, schedule_id: str, changes: Mapping[str, Any]
    ) -> ScheduleView:
        """Change the fields named in `changes` (`ScheduleDraft`'s names); naming `rrule` or
        `cron` drops the other unless both are named. A new rule or zone starts its series
        now; enabling it again clears why it paused, and does not run what it missed.
        Pausing alone checks nothing: a schedule whose model is gone can still be paused."""
        row = await self._owned(user_id, schedule_id)
        if dict(changes) == {"enabled": False}:
            return await self._pause(row, None)
        draft = replace(_draft_of(row), **_with_rule(changes))
        now = self._now()
        times_changed = (draft.rrule, draft.cron, draft.timezone) != (
            row.rrule,
            row.cron,
            row.timezone,
        )
        resumed = draft.enabled and not row.enabled
        changed = await self._checked(
            row, draft, now, new_series=times_changed, from_now=times_changed or resumed
        )
        changed.update_time = now
        if draft.enabled != row.enabled:
            changed.paused_reason = None
        if not await self._store.save(changed):
            raise NotFound("Schedule not found")
        if changed.conversation == "same" and changed.project_id != row.project_id:
            await self._move_conversation(changed)
        self.clock.wake()
        return await self._view(changed)

    async def _move_conversation(self, schedule: ScheduleRow) -> None:
        """Its runs' conversation into its new project (or out of any), so the next run is
        not refused as one naming another project than its conversation's."""
        # Not found: no run began it yet, and the first run puts it in the project.
        with contextlib.suppress(NotFound):
            await self._projects.move(
                schedule.user_id, schedule.conversation_id, schedule.project_id
            )

    async def set_enabled(self, schedule_id: str, enabled: bool, reason: str) -> ScheduleView:
        """An admin pauses (with `reason`) or resumes any user's schedule."""
        row = await self._owned(None, schedule_id)
        if enabled:
            return await self.update(row.user_id, schedule_id, {"enabled": True})
        return await self._pause(row, reason if row.enabled else row.paused_reason)

    async def _pause(self, row: ScheduleRow, reason: str | None) -> ScheduleView:
        paused = replace_row(row, enabled=False, paused_reason=reason, update_time=self._now())
        if not await self._store.save(paused):
            raise NotFound("Schedule not found")
        return await self._view(paused)

    async def delete(self, user_id: str, schedule_id: str) -> None:
        if not await self._store.delete(user_id, schedule_id):
            raise NotFound("Schedule not found")

    async def runs(self, user_id: str, schedule_id: str) -> list[RunRecord]:
        """The schedule's runs, newest first."""
        await self._owned(user_id, schedule_id)
        return await self._store.runs(schedule_id, RUNS_LIMIT)

    async def run_now(self, user_id: str, schedule_id: str) -> RunRecord:
        """One run now, beside the schedule's own (a paused schedule too). A draining
        instance refuses it before claiming, as it refuses a stream, so the client's retry
        on another instance makes the one run."""
        row = await self._owned(user_id, schedule_id)
        if self._drain.draining:
            raise Draining(DRAINING, DRAINING_RETRY_SECONDS)
        run = await self._store.claim_now(row, self._instance_id, self._now())
        if run is None:
            raise Busy("A run of this schedule was started at this very moment")
        await self.start_run(row, run)
        record = await self._store.run(schedule_id, run.id)
        assert record is not None
        return record

    async def start_run(self, schedule: ScheduleRow, run: ScheduleRunRow) -> None:
        """Start the claimed run as a turn of the owner, in the conversation its claim chose;
        its row says how that went."""
        conversation_id = run.conversation_id or schedule.conversation_id
        try:
            started = await self._open(schedule, conversation_id)
        except Busy:
            await self._settle(run, "skipped", STILL_GOING, conversation_id)
        except _Waiting:
            await self._settle(run, "skipped", WAITING, conversation_id)
        except Unavailable as exc:
            await self._settle(run, "interrupted", str(exc), None)
        except TurnRefused as exc:
            await self._settle(run, "failed", str(exc), None)
            await self._pause_if_failing(schedule.id)
        except Exception:
            log.exception("scheduled run %s could not start", run.id)
            await self._settle(run, "failed", "the run could not start", None)
        else:
            try:
                await self._store.started(run.id, conversation_id, started.row_id, self._now())
            except StoreError as exc:
                log.warning("scheduled run %s started, not recorded: %s", run.id, exc)
            if self.on_started is not None:
                self.on_started(started, schedule.user_id, conversation_id)
            self._watch(schedule.id, started)

    async def _open(self, schedule: ScheduleRow, conversation_id: str) -> Run:
        entry = self._agents.get(schedule.kind)
        if entry is None:
            raise NotAvailable(f"The {schedule.kind} agent is not available in this version")
        if schedule.conversation == "same" and await self._waits_for_user(
            schedule.user_id, conversation_id
        ):
            raise _Waiting
        request = TurnRequest(
            query=schedule.query,
            conversation_id=conversation_id,
            on_disconnect="continue",
            webhook=schedule.webhook_url,
            model=schedule.model,
            project_id=schedule.project_id,
        )
        run, _ = await self._streams.open(entry, request, schedule.user_id)
        return run

    async def _waits_for_user(self, user_id: str, conversation_id: str) -> bool:
        try:
            leaf = await self._sessions.recent_turns(user_id, conversation_id, 1)
        except StoreError as exc:
            raise Unavailable("Service unavailable: the database is unavailable") from exc
        return bool(leaf) and leaf[-1].status == "paused"

    async def _settle(
        self, run: ScheduleRunRow, status: RunState, reason: str, conversation_id: str | None
    ) -> None:
        try:
            await self._store.settle(run.id, status, reason, conversation_id)
        except StoreError as exc:
            log.warning("scheduled run %s %s, not recorded: %s", run.id, status, exc)

    def _watch(self, schedule_id: str, run: Run) -> None:
        """Once the run ends here, see whether the schedule keeps failing."""

        async def ended() -> None:
            await run.ended.wait()
            if run.complete is not None and run.complete.status == "failed":
                await self._pause_if_failing(schedule_id)

        task = asyncio.create_task(ended(), name=f"schedule-run-{run.claim.task_id}")
        self._watching.add(task)
        task.add_done_callback(self._watching.discard)

    async def _pause_if_failing(self, schedule_id: str) -> None:
        most = self._settings.schedule_max_failures
        if not most:
            return
        try:
            recent = await self._store.recent_outcomes(schedule_id, most)
            if len(recent) < most or any(r.status != "failed" for r in recent):
                return
            last = recent[0].reason or "failed"
            reason = f"Paused after {most} failed runs in a row; the last: {last}"
            if await self._store.pause(schedule_id, reason, self._now()):
                log.warning("schedule %s paused itself: %s", schedule_id, reason)
        except StoreError as exc:
            log.warning("could not check schedule %s's failures: %s", schedule_id, exc)

    async def _owned(self, user_id: str | None, schedule_id: str) -> ScheduleRow:
        row = await self._store.get(user_id, schedule_id)
        if row is None:
            raise NotFound("Schedule not found")
        return row

    async def _view(self, row: ScheduleRow) -> ScheduleView:
        last = await self._store.last_runs([row.id])
        return ScheduleView(row, await asyncio.to_thread(_next_runs, row), last.get(row.id))

    async def _checked(
        self,
        row: ScheduleRow,
        draft: ScheduleDraft,
        now: datetime,
        *,
        new_series: bool,
        from_now: bool = True,
    ) -> ScheduleRow:
        """The row with `draft` in it, once everything in it is checked as a stream's request
        is; its series starts again when `new_series`, its next due time is found after now
        when `from_now`."""
        query = draft.query.strip()
        if not query:
            raise BadRequest("query is required and must not be empty")
        if len(draft.query) > self._settings.query_max_chars:
            raise TooLong(f"query is longer than {self._settings.query_max_chars} characters")
        entry = self._agents.get(draft.kind)
        if entry is None:
            raise BadRequest(f"kind must be one of: {', '.join(self._agents)}")
        if entry.needs_file:
            raise BadRequest(f"the {draft.kind} agent needs a file; a schedule cannot give one")
        if not entry.built:
            raise NotAvailable(f"The {draft.kind} agent is not available in this version")
        try:
            self._models.choose(draft.kind, draft.model)
        except UnknownModel as exc:
            raise ModelUnknown(str(exc)) from exc
        await self._check_project(row.user_id, draft.project_id)
        if draft.webhook_url:
            try:
                await self._webhooks.target(draft.webhook_url)
            except WebhookRefused as exc:
                raise BadRequest(f"webhookUrl refused: {exc}") from exc
        recurrence, series_start, next_due = await asyncio.to_thread(
            self._times, draft, row, now, new_series, from_now
        )
        return replace_row(
            row,
            name=(draft.name or "").strip() or query[:_NAME_CHARS],
            kind=draft.kind,
            query=draft.query,
            rrule=draft.rrule,
            cron=draft.cron,
            timezone=recurrence.timezone,
            model=draft.model,
            project_id=draft.project_id,
            conversation=draft.conversation,
            webhook_url=draft.webhook_url or None,
            enabled=draft.enabled,
            series_start=series_start,
            next_due=next_due,
        )

    def _times(
        self,
        draft: ScheduleDraft,
        row: ScheduleRow,
        now: datetime,
        new_series: bool,
        from_now: bool,
    ) -> tuple[Recurrence, str, datetime | None]:
        """The rule, its series' start and its next due time; refused when it is bad, has no
        time ahead, or runs more often than `SCHEDULE_MIN_SECONDS`. In a thread: a rule is
        given up to its deadline to find its times."""
        try:
            recurrence = Recurrence.parse(draft.rrule, draft.cron, draft.timezone)
            start = recurrence.first_start(now) if new_series else parse_wall(row.series_start)
            upcoming = recurrence.upcoming(now, start, GAP_SAMPLE)
        except RecurrenceError as exc:
            raise BadRequest(str(exc)) from exc
        if not upcoming:
            raise BadRequest("the schedule has no due time ahead (its rule has ended)")
        least = timedelta(seconds=self._settings.schedule_min_seconds)
        gaps = [b.at - a.at for a, b in itertools.pairwise(upcoming)]
        if gaps and min(gaps) < least:
            raise BadRequest(
                f"the schedule runs every {_span(min(gaps))} at times; the shortest interval"
                f" allowed is {_span(least)} (SCHEDULE_MIN_SECONDS)"
            )
        if not from_now and row.next_due is not None:
            return recurrence, format_wall(start), row.next_due
        return recurrence, format_wall(start), upcoming[0].at

    async def _check_project(self, user_id: str, project_id: str | None) -> None:
        """A project must be the caller's (another user's, or none: not found), as on a
        stream."""
        if project_id is not None:
            await self._projects.project(user_id, project_id)


class _Waiting(Exception):
    """The `same` conversation's last turn waits for the user."""


def replace_row(row: ScheduleRow, **values: Any) -> ScheduleRow:
    """A copy of the row with `values` changed (a table model has no `dataclasses.replace`)."""
    return ScheduleRow(**{**row.model_dump(), **values})


def _next_runs(row: ScheduleRow) -> list[datetime]:
    """Its next due times, in its zone's offset; none while it is paused or has ended."""
    if not row.enabled or row.next_due is None:
        return []
    try:
        recurrence = Recurrence.parse(row.rrule, row.cron, row.timezone)
        upcoming = recurrence.upcoming(
            row.next_due - timedelta(microseconds=1), parse_wall(row.series_start), NEXT_RUNS
        )
    except RecurrenceError:
        return [row.next_due]
    return [o.at.astimezone(recurrence.zone) for o in upcoming]


def _draft_of(row: ScheduleRow) -> ScheduleDraft:
    return ScheduleDraft(
        kind=row.kind,
        query=row.query,
        rrule=row.rrule,
        cron=row.cron,
        timezone=row.timezone,
        model=row.model,
        project_id=row.project_id,
        conversation="same" if row.conversation == "same" else "new",
        webhook_url=row.webhook_url,
        enabled=row.enabled,
        name=row.name,
    )


def _with_rule(changes: Mapping[str, Any]) -> dict[str, Any]:
    """`changes`, with the rule it does not name cleared when it names the other."""
    changed = dict(changes)
    if "rrule" in changed and "cron" not in changed:
        changed["cron"] = None
    if "cron" in changed and "rrule" not in changed:
        changed["rrule"] = None
    return changed


def _placeholder() -> dict[str, Any]:
    """The columns `_checked` fills, before it has."""
    return {
        "name": "",
        "kind": "",
        "query": "",
        "timezone": "UTC",
        "conversation": "new",
        "enabled": False,
        "series_start": "",
    }


def _span(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    if seconds % 3600 == 0 and seconds:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0 and seconds:
        return f"{seconds // 60} min"
    return f"{seconds} s"
