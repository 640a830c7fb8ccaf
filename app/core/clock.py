"""The one clock in-process deadlines are read from, so tests move time instead of waiting it out.

What this process decides by elapsed time (a claim's TTL in the in-process
task backend, how long an ended run stays readable) reads `Clock`; the
service runs on `SYSTEM_CLOCK`, and tests hand in one they advance. Deadlines
kept by Redis run on Redis's clock and are not moved by this one.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back: for durations and deadlines."""
        ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK: Clock = SystemClock()
