"""The pooled HTTP client a provider adapter talks through, sized from the settings.

One client per model of the catalog, built in the lifespan and closed with it. httpx2's
defaults (100 connections, a 5 s wait for a free one) make the 101st
concurrent stream fail, so the pool holds as many connections as the service
is meant to hold streams, all kept alive between calls.

The pool (`app/llm/pool.py`) finds a free connection without walking the
others; the connections are asyncio's own (`app/llm/network.py`), not
anyio's, whose bookkeeping around each read cost more than the read.
"""

from __future__ import annotations

import httpx2

from app.config import Settings
from app.core.outbound import transport_over
from app.llm.network import AsyncioNetwork
from app.llm.pool import StackPool


def build_http_client(settings: Settings, max_connections: int | None = None) -> httpx2.AsyncClient:
    """The pool for one model (`max_connections`: its own size, else `LLM_MAX_CONNECTIONS`)."""
    size = max_connections or settings.llm_max_connections
    limits = httpx2.Limits(max_connections=size, max_keepalive_connections=size)
    transport = transport_over(
        lambda _: AsyncioNetwork(),
        pool=lambda maker: StackPool(maker, max_connections=size, max_idle=size),
        limits=limits,
    )
    return httpx2.AsyncClient(
        transport=transport,
        # The client builds the transports of proxies named in the environment
        # (HTTPS_PROXY), which must hold as many streams as the direct one.
        limits=limits,
        # `read` bounds the wait for each chunk; a stream waiting for a pooled
        # connection is waiting for its first chunk, so it gets the same patience.
        timeout=httpx2.Timeout(
            settings.llm_timeout_seconds,
            connect=settings.llm_connect_timeout_seconds,
            pool=settings.llm_timeout_seconds,
        ),
    )
