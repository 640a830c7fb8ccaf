"""What one user may take of the service, checked before any model call or stored byte.

Two kinds of limit, each per user:

- concurrent streams (`MAX_STREAMS_PER_USER`): a slot is taken when a
  stream is accepted and given back when its run has ended (stored), not
  when the client goes away, since a run a client left goes on;
- new streams and uploads per minute (`STREAMS_PER_MINUTE`,
  `UPLOADS_PER_MINUTE`): token buckets that hold a minute's worth and
  refill evenly, so a burst is allowed and a steady flood is not.

A limit of 0 is no limit. Over a limit, `LimitExceeded` says when to try
again; the API answers it 429 with `Retry-After`.

    LimitExceeded        over a limit: `retry_after` seconds
    TaskBackendUnavailable (app.tasks.base)   the Redis backend is down: 503
"""

from __future__ import annotations

import math
from typing import Literal, Protocol

from app.config import SettingsPart

Action = Literal["stream", "upload"]
STREAM_SLOT_RETRY_SECONDS = 5
"""What `Retry-After` says when every stream slot is taken: no one knows when a run ends."""


class LimitExceeded(Exception):
    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


class Rates(SettingsPart, renamed={"max_streams": "max_streams_per_user"}):
    max_streams: int
    streams_per_minute: int
    uploads_per_minute: int

    def bucket(self, action: Action) -> int:
        """Tokens per minute for `action`, also the most one burst may take; 0: unlimited."""
        return self.streams_per_minute if action == "stream" else self.uploads_per_minute


def too_many_streams(rates: Rates) -> LimitExceeded:
    return LimitExceeded(
        f"Too many streams: at most {rates.max_streams} may run at once for one user; "
        "wait for one to end or stop one",
        STREAM_SLOT_RETRY_SECONDS,
    )


def too_fast(action: Action, per_minute: int, wait: float) -> LimitExceeded:
    what = "new streams" if action == "stream" else "uploads"
    return LimitExceeded(f"Too many {what}: at most {per_minute} a minute for one user", wait)


def refill(tokens: float, elapsed: float, per_minute: int) -> float:
    """The bucket after `elapsed` seconds: a minute refills it, never past full."""
    return min(float(per_minute), tokens + elapsed * per_minute / 60.0)


class StreamSlot(Protocol):
    async def release(self) -> None:
        """Give the slot back; releasing twice is safe."""
        ...


class Unheld:
    """The slot of a stream when streams at once are not limited: there is nothing to count.

    So a deployment without that limit pays nothing for it: on Redis, opening
    a stream costs no round trip before the turn starts (none at all when
    new streams a minute are unlimited too), and its end none after.
    """

    async def release(self) -> None:
        return None


UNHELD = Unheld()


class UserLimits(Protocol):
    async def open_stream(self, user: str, run_id: str, rates: Rates | None = None) -> StreamSlot:
        """Take one of the user's stream slots and a new-stream token, both or neither.

        `rates` replaces the settings' for this user (an admin's, `adjusted.py`).
        Raises `LimitExceeded` when no slot is free (checked first) or the bucket is empty.
        """
        ...

    async def take(self, user: str, action: Action, rates: Rates | None = None) -> None:
        """Take a token of the user's `action` bucket; raises `LimitExceeded` when it is empty."""
        ...

    async def close(self) -> None: ...
