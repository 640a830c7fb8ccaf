"""When a schedule is due: an RFC 5545 recurrence or a five-field cron, in an IANA time zone.

A schedule's times are wall-clock times of its zone: a daily 08:00 stays
08:00 local across a daylight-saving change, which a fixed interval in UTC
would not. The rules generate wall times (python-dateutil for RRULE,
cronsim for cron); here they become instants, in the order instants
come, which is not always the order of wall times: around a change a
sub-daily rule can make a wall time that does not exist (read, as RFC 5545
says, with the offset before the gap) or two walls that are one instant.
Those are sorted within a window of a few hours and said once.

An RRULE's series counts from its start (`DTSTART`): the first wall time
of the rule, or one the caller keeps. Iterating from a start years back
would cost every occurrence since, so a caller moves the start to an
occurrence already reached (`Recurrence.rebase`), unless the rule
counts its occurrences (`COUNT`). The start is kept as wall time, not
as an instant: a wall time that does not exist would not come back from
its instant, and the rule's defaults (the hour of a `FREQ=DAILY`) come
from it.

A rule can be slow to evaluate (one that never occurs walks to the year
9999, about 20 s), so every evaluation has a deadline
(`RecurrenceTooSlow`). Its errors:

    RecurrenceError        base: `str()` says what is wrong, fit for a 400
    └── RecurrenceTooSlow  its next times could not be found within the deadline

Left out: RDATE, EXDATE and several RRULEs in one schedule (one RRULE, with
an optional DTSTART line, is what a schedule takes), and cron's six-field
(seconds) form.
"""

from __future__ import annotations

import heapq
import itertools
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from dateutil.rrule import rrule, rrulestr

T = TypeVar("T")

DEFAULT_DEADLINE_SECONDS = 0.5
"""Longest one evaluation may take: a rule that occurs at all gives dozens of times in
milliseconds; one that never occurs would take seconds."""
_SLACK = timedelta(hours=3)
"""More than any zone's offset changes by at once (two hours at most): walls this far apart
are instants in the same order."""
_DTSTART = re.compile(
    r"DTSTART(?:;TZID=(?P<zone>[^:;]+))?:(?P<wall>\d{8}T\d{6})(?P<utc>Z?)", re.IGNORECASE
)
_COUNT = re.compile(r"(?:^|;)\s*COUNT\s*=", re.IGNORECASE)
WALL_FORMAT = "%Y-%m-%dT%H:%M:%S"
"""How a start's wall time is kept (no zone: it is the schedule's)."""


class RecurrenceError(ValueError):
    pass


class RecurrenceTooSlow(RecurrenceError):
    pass


@dataclass(frozen=True, slots=True)
class Occurrence:
    at: datetime
    """The instant, aware UTC."""
    wall: datetime
    """The wall time the rule made it from, naive, in the schedule's zone."""


def zone_of(name: str) -> ZoneInfo:
    """The IANA zone `name` (`Europe/Paris`, `UTC`); `RecurrenceError` for an unknown one."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise RecurrenceError(f"timezone {name!r} is not an IANA time zone name") from exc


class Recurrence:
    """One schedule's rule, checked: `Recurrence.parse(...)`, then ask it for times."""

    def __init__(
        self,
        zone: ZoneInfo,
        rule: str | None,
        cron: str | None,
        start: datetime | None,
        *,
        counted: bool = False,
    ) -> None:
        self.zone = zone
        self._rule = rule
        self._cron = cron
        self.start = start
        """The rule's own DTSTART as a wall time of `zone`, when it names one."""
        self.counted = counted
        """Whether the series counts from its first start (a `COUNT`): then it never moves."""

    @classmethod
    def parse(cls, rrule_text: str | None, cron: str | None, timezone: str | None) -> Recurrence:
        """Check a schedule's rule: exactly one of `rrule_text` and `cron`; `timezone` an IANA
        name, or None: the RRULE's `DTSTART;TZID=`, else UTC."""
        if (rrule_text is None) == (cron is None):
            raise RecurrenceError("give either rrule or cron (one of them)")
        if cron is not None:
            return cls._parse_cron(cron, zone_of(timezone or "UTC"))
        assert rrule_text is not None
        return cls._parse_rrule(rrule_text, timezone)

    @classmethod
    def _parse_cron(cls, cron: str, zone: ZoneInfo) -> Recurrence:
        if len(cron.split()) != 5:
            raise RecurrenceError("cron must have five fields: minute hour day month weekday")
        try:
            CronSim(cron, datetime(2000, 1, 1, tzinfo=zone))
        except CronSimError as exc:
            raise RecurrenceError(f"cron {cron!r}: {exc}") from exc
        return cls(zone, None, cron.strip(), None)

    @classmethod
    def _parse_rrule(cls, text: str, timezone: str | None) -> Recurrence:
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        start: datetime | None = None
        rules: list[str] = []
        zone = zone_of(timezone) if timezone else None
        for line in lines:
            found = _DTSTART.fullmatch(line)
            if found is not None:
                if start is not None:
                    raise RecurrenceError("rrule has more than one DTSTART line")
                start, zone = _start(found, zone)
                continue
            name, colon, rest = line.partition(":")
            if colon and name.upper() == "RRULE":
                line = rest
            elif colon:
                raise RecurrenceError(f"rrule: only DTSTART and one RRULE are taken, not {name}")
            rules.append(line)
        if len(rules) != 1:
            raise RecurrenceError("rrule must hold exactly one rule (FREQ=...)")
        zone = zone or zone_of("UTC")
        rule = rules[0]
        try:
            built = rrulestr(rule, dtstart=datetime(2000, 1, 1, tzinfo=zone))
        except (ValueError, TypeError, KeyError) as exc:
            raise RecurrenceError(f"rrule {rule!r}: {exc}") from exc
        if not isinstance(built, rrule):
            raise RecurrenceError("rrule must hold exactly one rule (FREQ=...)")
        return cls(zone, rule, None, start, counted=_COUNT.search(rule) is not None)

    @property
    def timezone(self) -> str:
        return self.zone.key

    def first_start(self, now: datetime) -> datetime:
        """Where a new series starts: the rule's DTSTART, else `now` to the minute (wall)."""
        if self.start is not None:
            return self.start
        return now.astimezone(self.zone).replace(second=0, microsecond=0, tzinfo=None)

    def rebase(self, start: datetime, reached: Occurrence) -> datetime:
        """The start to keep once `reached` is due: that occurrence, unless the rule counts."""
        return start if self.counted else reached.wall

    def upcoming(
        self,
        after: datetime,
        start: datetime,
        count: int,
        deadline: float = DEFAULT_DEADLINE_SECONDS,
    ) -> list[Occurrence]:
        """The first `count` occurrences strictly after the instant `after`, earliest first."""

        def take() -> list[Occurrence]:
            found: list[Occurrence] = []
            for occurrence in self._instants(after, start):
                found.append(occurrence)
                if len(found) == count:
                    break
            return found

        return bounded(take, deadline)

    def latest(
        self,
        since: datetime,
        until: datetime,
        start: datetime,
        deadline: float = DEFAULT_DEADLINE_SECONDS,
    ) -> tuple[Occurrence | None, Occurrence | None]:
        """The last occurrence in [`since`, `until`] (None: none) and the first after `until`
        (None: the series has ended)."""

        def find() -> tuple[Occurrence | None, Occurrence | None]:
            last = None
            for occurrence in self._instants(since - timedelta(microseconds=1), start):
                if occurrence.at > until:
                    return last, occurrence
                last = occurrence
            return last, None

        return bounded(find, deadline)

    def shortest_gap(self, after: datetime, start: datetime, count: int) -> timedelta | None:
        """The shortest time between two of the next `count` occurrences (None: fewer than two)."""
        times = [o.at for o in self.upcoming(after, start, count)]
        return min((b - a for a, b in itertools.pairwise(times)), default=None)

    def _instants(self, after: datetime, start: datetime) -> Iterator[Occurrence]:
        """Occurrences after the instant `after`, in instant order, each instant once."""
        begin = after.astimezone(self.zone).replace(tzinfo=None) - _SLACK
        pending: list[tuple[datetime, datetime]] = []
        last: datetime | None = None
        for wall in self._walls(begin, start):
            if wall.utcoffset() is None:
                continue
            heapq.heappush(pending, (wall.astimezone(UTC), wall.replace(tzinfo=None)))
            naive = wall.replace(tzinfo=None)
            while pending and pending[0][1] <= naive - _SLACK:
                at, made = heapq.heappop(pending)
                if at > after and at != last:
                    last = at
                    yield Occurrence(at, made)
        while pending:
            at, made = heapq.heappop(pending)
            if at > after and at != last:
                last = at
                yield Occurrence(at, made)

    def _walls(self, begin: datetime, start: datetime) -> Iterator[datetime]:
        """The rule's wall times (aware, in the zone) from the wall time `begin` on."""
        if self._cron is not None:
            walls = CronSim(self._cron, (begin - timedelta(seconds=1)).replace(tzinfo=self.zone))
            yield from _until_exhausted(walls)
            return
        assert self._rule is not None
        rule = rrulestr(self._rule, dtstart=start.replace(tzinfo=self.zone))
        assert isinstance(rule, rrule)
        yield from rule.xafter(begin.replace(tzinfo=self.zone), inc=True)


def _start(found: re.Match[str], zone: ZoneInfo | None) -> tuple[datetime, ZoneInfo]:
    """A DTSTART line's wall time in the schedule's zone, and that zone."""
    wall = datetime.strptime(found["wall"], "%Y%m%dT%H%M%S")
    named = zone_of(found["zone"]) if found["zone"] else None
    if named is not None and zone is not None and named.key != zone.key:
        raise RecurrenceError(
            f"timezone {zone.key} and the rrule's DTSTART zone {named.key} differ"
        )
    zone = zone or named or zone_of("UTC")
    if found["utc"]:
        wall = wall.replace(tzinfo=UTC).astimezone(zone).replace(tzinfo=None)
    return wall, zone


def _until_exhausted(walls: CronSim) -> Iterator[datetime]:
    """cronsim ends a series that has no time in the next fifty years with StopIteration."""
    while True:
        try:
            yield next(walls)
        except StopIteration:
            return


def bounded(work: Callable[[], T], seconds: float) -> T:
    """`work()`, stopped with `RecurrenceTooSlow` once it has run `seconds`.

    The rule libraries give no way to stop their iteration, so the check is on
    every Python call of this thread (a trace of `call` events only, without line
    events): it interrupts even a loop that never yields. Any tracer set before
    (a debugger, coverage) is put back after.
    """
    deadline = time.monotonic() + seconds
    previous = sys.gettrace()

    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        if time.monotonic() > deadline:
            raise RecurrenceTooSlow(
                "the schedule's next times could not be found in time (does it ever occur?)"
            )

    sys.settrace(tracer)
    try:
        return work()
    finally:
        sys.settrace(previous)


def parse_wall(text: str) -> datetime:
    return datetime.strptime(text, WALL_FORMAT)


def format_wall(wall: datetime) -> str:
    return wall.strftime(WALL_FORMAT)
