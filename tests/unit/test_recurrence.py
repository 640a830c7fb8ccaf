"""A schedule's times: RRULE and cron in a time zone, across daylight-saving changes, with a
fixed "now" on each side of a change."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from app.core.recurrence import Occurrence, Recurrence, RecurrenceError, RecurrenceTooSlow

PARIS_SPRING = datetime(2024, 3, 29, 12, tzinfo=UTC)
"""Two days before Paris moves from +01:00 to +02:00 (2024-03-31, 02:00 local)."""
PARIS_AUTUMN = datetime(2024, 10, 25, 12, tzinfo=UTC)
"""Two days before Paris moves back to +01:00 (2024-10-27, 03:00 local)."""


def local_times(recurrence: Recurrence, now: datetime, count: int) -> list[str]:
    start = recurrence.first_start(now)
    return [
        o.at.astimezone(recurrence.zone).isoformat() for o in recurrence.upcoming(now, start, count)
    ]


@pytest.mark.parametrize(
    ("rule", "cron"), [("FREQ=DAILY;BYHOUR=8;BYMINUTE=0", None), (None, "0 8 * * *")]
)
def test_a_daily_eight_oclock_stays_at_eight_local_when_the_clocks_go_forward(
    rule: str | None, cron: str | None
) -> None:
    recurrence = Recurrence.parse(rule, cron, "Europe/Paris")

    assert local_times(recurrence, PARIS_SPRING, 4) == [
        "2024-03-30T08:00:00+01:00",
        "2024-03-31T08:00:00+02:00",
        "2024-04-01T08:00:00+02:00",
        "2024-04-02T08:00:00+02:00",
    ]


@pytest.mark.parametrize(
    ("rule", "cron"), [("FREQ=DAILY;BYHOUR=8;BYMINUTE=0", None), (None, "0 8 * * *")]
)
def test_a_daily_eight_oclock_stays_at_eight_local_when_the_clocks_go_back(
    rule: str | None, cron: str | None
) -> None:
    recurrence = Recurrence.parse(rule, cron, "Europe/Paris")

    assert local_times(recurrence, PARIS_AUTUMN, 3) == [
        "2024-10-26T08:00:00+02:00",
        "2024-10-27T08:00:00+01:00",
        "2024-10-28T08:00:00+01:00",
    ]


def test_the_instants_of_a_daily_time_are_a_day_apart_but_across_the_change() -> None:
    recurrence = Recurrence.parse("FREQ=DAILY;BYHOUR=8;BYMINUTE=0", None, "Europe/Paris")
    times = [
        o.at for o in recurrence.upcoming(PARIS_SPRING, recurrence.first_start(PARIS_SPRING), 3)
    ]

    assert [b - a for a, b in itertools.pairwise(times)] == [
        timedelta(hours=23),
        timedelta(hours=24),
    ]


def test_a_half_hourly_rule_over_the_missing_hour_gives_each_instant_once_in_order() -> None:
    recurrence = Recurrence.parse("FREQ=MINUTELY;INTERVAL=30", None, "Europe/Paris")
    now = datetime(2024, 3, 30, 23, 0, tzinfo=UTC)  # 00:00 local, the night of the change

    assert local_times(recurrence, now, 6) == [
        "2024-03-31T00:30:00+01:00",
        "2024-03-31T01:00:00+01:00",
        "2024-03-31T01:30:00+01:00",
        "2024-03-31T03:00:00+02:00",
        "2024-03-31T03:30:00+02:00",
        "2024-03-31T04:00:00+02:00",
    ]
    assert recurrence.shortest_gap(now, recurrence.first_start(now), 36) == timedelta(minutes=30)


def test_an_hourly_cron_over_the_repeated_hour_runs_at_each_instant() -> None:
    recurrence = Recurrence.parse(None, "0 * * * *", "America/New_York")
    now = datetime(2024, 11, 3, 4, 30, tzinfo=UTC)  # 00:30 EDT; 02:00 EDT becomes 01:00 EST

    assert local_times(recurrence, now, 3) == [
        "2024-11-03T01:00:00-04:00",
        "2024-11-03T01:00:00-05:00",
        "2024-11-03T02:00:00-05:00",
    ]


def test_nothing_is_due_twice_when_the_start_moves_to_each_occurrence_reached() -> None:
    recurrence = Recurrence.parse("FREQ=HOURLY;INTERVAL=5;BYMINUTE=15", None, "Europe/Paris")
    now = datetime(2024, 3, 29, 0, 0, tzinfo=UTC)
    start = recurrence.first_start(now)
    expected = [o.at for o in recurrence.upcoming(now, start, 30)]

    walked: list[datetime] = []
    after = now
    while len(walked) < 30:
        (occurrence,) = recurrence.upcoming(after, start, 1)
        walked.append(occurrence.at)
        start, after = recurrence.rebase(start, occurrence), occurrence.at

    assert walked == expected


def test_a_counted_rule_keeps_its_start() -> None:
    recurrence = Recurrence.parse("FREQ=DAILY;COUNT=3", None, "UTC")
    start = datetime(2024, 1, 1, 9, 0)
    reached = Occurrence(datetime(2024, 1, 2, 9, 0, tzinfo=UTC), datetime(2024, 1, 2, 9, 0))

    assert recurrence.rebase(start, reached) == start
    assert [o.at.day for o in recurrence.upcoming(datetime(2023, 12, 1, tzinfo=UTC), start, 9)] == [
        1,
        2,
        3,
    ]


def test_the_rules_dtstart_gives_the_zone_and_the_start() -> None:
    recurrence = Recurrence.parse(
        "DTSTART;TZID=America/New_York:20240101T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,FR",
        None,
        None,
    )

    assert recurrence.timezone == "America/New_York"
    assert recurrence.first_start(PARIS_SPRING) == datetime(2024, 1, 1, 9, 0)
    assert local_times(recurrence, PARIS_SPRING, 2) == [
        "2024-03-29T09:00:00-04:00",
        "2024-04-01T09:00:00-04:00",
    ]


def test_the_latest_missed_time_and_the_next_one() -> None:
    recurrence = Recurrence.parse("FREQ=SECONDLY;INTERVAL=5", None, "UTC")
    start = datetime(2024, 1, 1, 0, 0)
    since = datetime(2024, 1, 1, 0, 0, 5, tzinfo=UTC)

    last, following = recurrence.latest(since, since + timedelta(seconds=27), start)

    assert last is not None
    assert following is not None
    assert (last.at.second, following.at.second) == (30, 35)


def test_a_series_that_ended_has_no_next_time() -> None:
    recurrence = Recurrence.parse("FREQ=DAILY;UNTIL=20240105T000000Z", None, "UTC")
    start = datetime(2024, 1, 1, 8, 0)

    last, following = recurrence.latest(
        datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 2, 1, tzinfo=UTC), start
    )

    assert last is not None
    assert last.at == datetime(2024, 1, 4, 8, 0, tzinfo=UTC)
    assert following is None
    assert recurrence.upcoming(datetime(2024, 2, 1, tzinfo=UTC), start, 3) == []


def test_a_rule_that_never_occurs_is_stopped_at_its_deadline() -> None:
    recurrence = Recurrence.parse("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", None, "UTC")

    with pytest.raises(RecurrenceTooSlow):
        recurrence.upcoming(PARIS_SPRING, recurrence.first_start(PARIS_SPRING), 3, deadline=0.05)


@pytest.mark.parametrize(
    ("rule", "cron", "zone", "says"),
    [
        (None, None, "UTC", "either rrule or cron"),
        ("FREQ=DAILY", "0 8 * * *", "UTC", "either rrule or cron"),
        ("FREQ=SOMETIMES", None, "UTC", "rrule"),
        ("FREQ=DAILY\nEXDATE:20240101T000000Z", None, "UTC", "only DTSTART and one RRULE"),
        ("FREQ=DAILY\nRRULE:FREQ=WEEKLY", None, "UTC", "exactly one rule"),
        ("DTSTART;TZID=Asia/Tokyo:20240101T080000\nFREQ=DAILY", None, "UTC", "differ"),
        ("FREQ=DAILY;UNTIL=20240105T000000", None, "Europe/Paris", "UNTIL"),
        (None, "0 8 * *", "UTC", "five fields"),
        (None, "0 0 8 * * *", "UTC", "five fields"),
        (None, "61 8 * * *", "UTC", "minute"),
        (None, "0 8 * * *", "Mars/Olympus", "IANA"),
        (None, "0 8 * * *", "../../etc/passwd", "IANA"),
    ],
)
def test_a_bad_rule_says_what_is_wrong(
    rule: str | None, cron: str | None, zone: str, says: str
) -> None:
    with pytest.raises(RecurrenceError, match=says):
        Recurrence.parse(rule, cron, zone)
