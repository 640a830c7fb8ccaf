"""The pooled HTTP client a provider adapter talks through, sized from the settings.

One client per provider, built in the lifespan and closed with it. httpx's
defaults (100 connections, a 5 s wait for a free one) make the 101st
concurrent stream fail, so the pool holds as many connections as the service
is meant to hold streams, all kept alive between calls.
"""

from __future__ import annotations

import httpx2 as httpx

from app.config import Settings


def build_http_client(settings: Settings) -> httpx.AsyncClient:
    size = settings.llm_max_connections
    return httpx.AsyncClient(
        limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
        # `read` bounds the wait for each chunk; a stream waiting for a pooled
        # connection is waiting for its first chunk, so it gets the same patience.
        timeout=httpx.Timeout(
            settings.llm_timeout_seconds,
            connect=settings.llm_connect_timeout_seconds,
            pool=settings.llm_timeout_seconds,
        ),
    )
