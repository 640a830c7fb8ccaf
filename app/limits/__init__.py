"""Per-user limits: concurrent streams, and new streams and uploads per minute.

`base` holds the interface and the rules, `in_process` the one-instance
backend, `redis` the one that holds across instances; `build_user_limits`
picks one from the settings, as the task backend is picked.
"""

from __future__ import annotations

from app.config import Settings
from app.limits.base import LimitExceeded, Rates, StreamSlot, UserLimits
from app.limits.in_process import InProcessUserLimits
from app.tasks.redis.target import RedisTarget

__all__ = ["LimitExceeded", "Rates", "StreamSlot", "UserLimits", "build_user_limits"]


def build_user_limits(settings: Settings) -> UserLimits:
    rates = Rates.from_settings(settings)
    if not settings.redis_url:
        return InProcessUserLimits(rates)
    from app.limits.redis import RedisUserLimits  # only then: one instance never loads the client

    return RedisUserLimits(RedisTarget.from_settings(settings), settings.redis_prefix, rates)
