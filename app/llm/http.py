"""The pooled HTTP client a provider adapter talks through, sized from the settings.

One client per provider, built in the lifespan and closed with it. httpx's
defaults (100 connections, a 5 s wait for a free one) make the 101st
concurrent stream fail, so the pool holds as many connections as the service
is meant to hold streams, all kept alive between calls.

The pool (`app/llm/pool.py`) finds a free connection without walking the
others. Before it reuses an idle connection it asks whether the server has
closed it; httpcore asks through anyio's attributes, which build a
dictionary of lambdas per question (bench/README.md, "The floor cut").
`_ProbedNetwork` gives each connection's stream its socket once, and answers
that question with one `poll`.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

import httpcore2
import httpx2 as httpx

# httpcore's own probe, as its streams answer `is_readable`, given the socket directly.
from httpcore2._utils import is_socket_readable

from app.config import Settings
from app.core.outbound import transport_over
from app.llm.pool import StackPool


def build_http_client(settings: Settings) -> httpx.AsyncClient:
    size = settings.llm_max_connections
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    transport = transport_over(
        _ProbedNetwork,
        pool=lambda maker: StackPool(maker, max_connections=size, max_idle=size),
        limits=limits,
    )
    return httpx.AsyncClient(
        transport=transport,
        # The client builds the transports of proxies named in the environment
        # (HTTPS_PROXY), which must hold as many streams as the direct one.
        limits=limits,
        # `read` bounds the wait for each chunk; a stream waiting for a pooled
        # connection is waiting for its first chunk, so it gets the same patience.
        timeout=httpx.Timeout(
            settings.llm_timeout_seconds,
            connect=settings.llm_connect_timeout_seconds,
            pool=settings.llm_timeout_seconds,
        ),
    )


class _ProbedNetwork(httpcore2.AsyncNetworkBackend):
    """The pool's own network layer, each stream it opens wrapped in a `_ProbedStream`."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return _ProbedStream(await self._inner.connect_tcp(*args, **kwargs))

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return _ProbedStream(await self._inner.connect_unix_socket(*args, **kwargs))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _ProbedStream(httpcore2.AsyncNetworkStream):
    def __init__(self, inner: httpcore2.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
    ) -> httpcore2.AsyncNetworkStream:
        return _ProbedStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return is_socket_readable(self._socket)
        return self._inner.get_extra_info(info)
