"""What the schedule clock does with a due schedule at a given "now": which due time it runs
(catch-up `one` or `none`), where it moves the schedule on to, and where its series restarts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.store.schedule_models import ScheduleRow
from app.tasks.schedule_clock import plan

GRACE = timedelta(seconds=60)
NOW = datetime(2024, 3, 31, 6, 30, tzinfo=UTC)  # 08:30 in Paris, on the day the clocks moved


def daily_eight(next_due: datetime) -> ScheduleRow:
    return ScheduleRow(
        id="s",
        user_id="u",
        name="n",
        kind="chat",
        query="q",
        rrule="FREQ=DAILY;BYHOUR=8;BYMINUTE=0",
        timezone="Europe/Paris",
        conversation="new",
        conversation_id="c",
        enabled=True,
        series_start="2024-03-01T00:00:00",
        next_due=next_due,
        create_time=NOW,
        update_time=NOW,
    )


def test_a_due_time_just_passed_runs_whatever_the_catch_up() -> None:
    due = datetime(2024, 3, 31, 6, 0, tzinfo=UTC)  # 08:00 +02:00
    for catch_up in ("one", "none"):
        planned = plan(daily_eight(due), due + timedelta(seconds=2), catch_up, GRACE)

        assert planned.due is not None
        assert planned.due.at == due
        assert planned.following is not None
        assert planned.following.at == datetime(2024, 4, 1, 6, 0, tzinfo=UTC)
        assert planned.series_start == "2024-03-31T08:00:00"


def test_days_missed_give_the_latest_one_or_none() -> None:
    missed_since = datetime(2024, 3, 26, 7, 0, tzinfo=UTC)  # 08:00 +01:00, five days before

    one = plan(daily_eight(missed_since), NOW, "one", GRACE)
    none = plan(daily_eight(missed_since), NOW, "none", GRACE)

    assert one.due is not None
    assert one.due.at == datetime(2024, 3, 31, 6, 0, tzinfo=UTC)
    assert none.due is None
    assert one.following == none.following
    assert none.following is not None
    assert none.following.at == datetime(2024, 4, 1, 6, 0, tzinfo=UTC)
