"""Pages read a short while ago, so agents asking for one page again do not fetch it again.

Several tasks of one research, or several users, often read the same page
within minutes. The cache keeps what was read (the final URL, the title,
the text) for `FETCH_CACHE_SECONDS`: in Redis when `REDIS_URL` is set, so
every instance shares it, else in this process. A Redis that does not
answer is a miss, never a failed read: the page is fetched as if never seen.
A site's robots.txt is kept here too, under its own key.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from typing import Protocol

from app.config import Settings
from app.tasks.redis.target import RedisTarget

IN_PROCESS_ENTRIES = 512
"""Pages one process keeps at most (about 20 KB of text each); the oldest go first."""


class PageCache(Protocol):
    async def get(self, key: str) -> bytes | None: ...

    async def put(self, key: str, value: bytes) -> None: ...

    async def close(self) -> None: ...


def cache_key(kind: str, url: str) -> str:
    """A short key for a URL of any length: `page:<sha256>` or `robots:<sha256>`."""
    return f"{kind}:{hashlib.sha256(url.encode()).hexdigest()}"


class NoCache:
    """`FETCH_CACHE_SECONDS=0`: every read fetches."""

    async def get(self, key: str) -> bytes | None:
        return None

    async def put(self, key: str, value: bytes) -> None:
        return None

    async def close(self) -> None:
        return None


class InProcessPageCache:
    def __init__(self, seconds: float, entries: int = IN_PROCESS_ENTRIES) -> None:
        self._seconds = seconds
        self._entries = entries
        self._kept: OrderedDict[str, tuple[float, bytes]] = OrderedDict()

    async def get(self, key: str) -> bytes | None:
        found = self._kept.get(key)
        if found is None or found[0] < time.monotonic():
            self._kept.pop(key, None)
            return None
        return found[1]

    async def put(self, key: str, value: bytes) -> None:
        self._kept[key] = (time.monotonic() + self._seconds, value)
        self._kept.move_to_end(key)
        while len(self._kept) > self._entries:
            self._kept.popitem(last=False)

    async def close(self) -> None:
        self._kept.clear()


def build_page_cache(settings: Settings) -> PageCache:
    """Redis with `REDIS_URL` (shared by every instance), else this process's; none at 0 s."""
    if settings.fetch_cache_seconds <= 0:
        return NoCache()
    seconds = settings.fetch_cache_seconds
    if settings.redis_url:
        from app.tools.redis_page_cache import RedisPageCache  # only then: no client otherwise

        return RedisPageCache(RedisTarget.from_settings(settings), settings.redis_prefix, seconds)
    return InProcessPageCache(seconds)
