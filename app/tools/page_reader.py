"""Reading a web page an agent chose: politely, safely, once per few minutes.

`PageReader.read(url)` is what `fetch_page` and deep research's tasks call:

- safe: only `http(s)` URLs without credentials in them; the request and
  every redirect go through the outbound guard (`guarded_client`: public
  addresses only, `OUTBOUND_MAX_BYTES` read at most, `OUTBOUND_TIMEOUT_SECONDS`
  for the whole exchange); no cookies kept or sent; a body of a type that
  cannot be read is refused before it is read;
- polite: an honest `User-Agent` (`FETCH_USER_AGENT`); a site's robots.txt
  is honoured (`FETCH_RESPECT_ROBOTS`, kept like a page); at most
  `FETCH_PER_HOST` pages of one host and `FETCH_MAX_PARALLEL` pages in all
  are read at once by this instance;
- fast: what was read is kept for `FETCH_CACHE_SECONDS` (page_cache.py).

    PageError   base: `str()` is a sentence the model reads as the tool's error

Every failure is a `PageError`: a caller turns it into a tool error, never a failed turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from typing import Self
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

import httpx2
import orjson

from app.config import Settings, SettingsPart
from app.core.outbound import FetchFailed, OutboundError, OutboundPolicy, fetch, guarded_client
from app.documents.isolated import ParseLimits
from app.documents.library import LibrarySettings
from app.tools.page_cache import PageCache, build_page_cache, cache_key
from app.tools.page_text import PDF_TYPES, UnreadablePage, media_type, page_text, refused_type

log = logging.getLogger(__name__)

KEPT_CHARS = 200_000
"""Of a page's text, what is kept (and cached): a caller cuts what the model is given."""
ROBOTS_MAX_BYTES = 512 * 1024
"""Google reads 500 KiB of a robots.txt; a site's rules past that are not read."""
ROBOTS_SECONDS = 10.0
_ROBOTS_ALLOW_ALL = b""
_ROBOTS_DENY_ALL = b"User-agent: *\nDisallow: /\n"


class PageError(Exception):
    """The page could not be read; `str()` says why, in words fit for the model."""


class ReaderSettings(
    SettingsPart,
    prefix="fetch_",
    renamed={
        "allowlist": "outbound_allowlist",
        "max_bytes": "outbound_max_bytes",
        "seconds": "outbound_timeout_seconds",
    },
):
    respect_robots: bool
    user_agent: str
    per_host: int
    max_parallel: int
    allowlist: str
    max_bytes: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Page:
    url: str
    """Where the text came from, after redirects."""
    title: str
    text: str
    cut: bool = False
    """The page was longer than could be read (bytes or characters): `text` is its start."""


class PageReader:
    def __init__(
        self,
        client: httpx2.AsyncClient,
        cache: PageCache,
        settings: ReaderSettings,
        parsing: ParseLimits,
    ) -> None:
        self._client = client
        self._cache = cache
        self._settings = settings
        self._parsing = parsing
        self._all = asyncio.Semaphore(settings.max_parallel)
        self._hosts: dict[str, tuple[asyncio.Semaphore, int]] = {}
        self._agent = settings.user_agent.split("/", 1)[0].split()[0] if settings.user_agent else ""

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: Settings) -> AsyncIterator[Self]:
        """A reader with its own guarded client and cache, both closed when it is."""
        own = ReaderSettings.from_settings(settings)
        policy = OutboundPolicy.parse(own.allowlist)
        cache = build_page_cache(settings)
        client = guarded_client(
            policy,
            timeout=own.seconds,
            user_agent=own.user_agent,
            max_connections=own.max_parallel * 2,
        )
        try:
            async with client:
                yield cls(client, cache, own, LibrarySettings.from_settings(settings).parsing)
        finally:
            await cache.close()

    async def read(self, url: str) -> Page:
        """The page's title and main text; raises `PageError`."""
        url = checked_url(url)
        key = cache_key("page", url)
        kept = _page(await self._cache.get(key))
        if kept is not None:
            return kept
        if self._settings.respect_robots and not await self._robots_allow(url):
            raise PageError(f"The site's robots.txt does not let {self._agent} read this page.")
        async with self._slot(urlsplit(url).netloc.lower()):
            page = await self._fetch_page(url)
        await self._cache.put(key, orjson.dumps(asdict(page)))
        return page

    async def _fetch_page(self, url: str) -> Page:
        settings = self._settings
        try:
            fetched = await fetch(
                self._client,
                url,
                max_bytes=settings.max_bytes,
                seconds=settings.seconds,
                refuse=refused_type,
            )
        except OutboundError as exc:
            raise PageError(str(exc)) from exc
        if fetched.truncated and media_type(fetched.content_type) in PDF_TYPES:
            raise PageError(
                f"The PDF is larger than {settings.max_bytes:,} bytes, more than can be read."
            )
        try:
            read = await page_text(fetched.body, fetched.content_type, fetched.url, self._parsing)
        except UnreadablePage as exc:
            raise PageError(str(exc)) from exc
        text = read.text[:KEPT_CHARS]
        cut = fetched.truncated or len(read.text) > KEPT_CHARS
        return Page(fetched.url, read.title, text, cut)

    async def _robots_allow(self, url: str) -> bool:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        key = cache_key("robots", origin)
        rules = await self._cache.get(key)
        if rules is None:
            rules = await self._robots(origin)
            await self._cache.put(key, rules)
        parser = RobotFileParser()
        parser.parse(rules.decode("utf-8", "replace").splitlines())
        return parser.can_fetch(self._agent or "*", url)

    async def _robots(self, origin: str) -> bytes:
        """The site's rules (RFC 9309): none when it has no robots.txt (4xx); when the
        server fails (5xx), nothing may be read; when it cannot be reached, the page's
        own fetch says why."""
        try:
            fetched = await fetch(
                self._client,
                f"{origin}/robots.txt",
                max_bytes=ROBOTS_MAX_BYTES,
                seconds=min(ROBOTS_SECONDS, self._settings.seconds),
            )
        except FetchFailed as exc:
            if exc.status is not None and exc.status >= 500:
                return _ROBOTS_DENY_ALL
            return _ROBOTS_ALLOW_ALL
        except OutboundError as exc:
            raise PageError(str(exc)) from exc
        return fetched.body

    @asynccontextmanager
    async def _slot(self, host: str) -> AsyncIterator[None]:
        """One of the instance's fetches and one of this host's, for as long as the fetch."""
        semaphore, users = self._hosts.get(host) or (asyncio.Semaphore(self._settings.per_host), 0)
        self._hosts[host] = (semaphore, users + 1)
        try:
            async with self._all, semaphore:
                yield
        finally:
            semaphore, users = self._hosts[host]
            if users == 1:
                del self._hosts[host]
            else:
                self._hosts[host] = (semaphore, users - 1)


def _page(kept: bytes | None) -> Page | None:
    """A cached page; None for a miss, or for what another version of us kept."""
    if kept is None:
        return None
    try:
        return Page(**orjson.loads(kept))
    except (orjson.JSONDecodeError, TypeError):
        return None


def checked_url(url: str) -> str:
    """The URL to read, or `PageError`: http(s) with a host, and no user or password in it."""
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise PageError("That is not a valid URL.") from exc
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise PageError("Only http and https URLs with a host name can be read.")
    if parts.username is not None or parts.password is not None:
        raise PageError("A URL with a user name or password in it is not read.")
    return parts._replace(fragment="").geturl()
