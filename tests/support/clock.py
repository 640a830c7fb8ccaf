"""A clock the test moves: deadlines decided in-process pass at once, not after a sleep."""

from __future__ import annotations


class TestClock:
    """Starts at an arbitrary point and stands still until `advance`."""

    __test__ = False

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
