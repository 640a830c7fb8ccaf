"""Requests to URLs that a model, a user or a remote document chose: the SSRF guard.

A web page fetch, an image URL in a deck, an MCP or A2A server from user
settings: whoever picks the URL could point it at the service's own
network (Redis, the database, a cloud's metadata service at
169.254.169.254). Every such request goes through `guarded_client`, whose
connections are checked where they are made: the host is resolved, and
only addresses on the public internet (or named by `OUTBOUND_ALLOWLIST`)
are connected to. Checking at connect time, on the address actually
dialled, covers every redirect and a DNS answer that changes between a
check and the connection (rebinding); a proxy would hide the destination,
so the client uses none.

`fetch` adds the bounds a fetched page needs: at most `max_bytes` of body
(the rest is cut, and said so) and one deadline for the whole exchange,
redirects included.

    OutboundError           base: `str()` is fit to show a model or a user
    ├── BlockedDestination  the host resolves only to refused addresses
    ├── Unresolvable        the host's name does not resolve (in time)
    └── FetchFailed         not http(s), unreachable, too slow, or an HTTP error

It lives in `core`, beside the vocabulary every layer shares, because every
layer has such URLs (a tool's page fetch, an agent's pictures, interop's
MCP and A2A servers, a webhook) and it imports nothing of ours: callers
pass `OutboundPolicy.parse(settings.outbound_allowlist)`.

Left out: what to do with the bytes (that is the agent's tool, tools/page_reader.py,
which also keeps robots.txt and the cache).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import ssl
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import httpcore2
import httpx2
from httpcore2._async.interfaces import AsyncRequestInterface

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class OutboundError(Exception):
    pass


class BlockedDestination(OutboundError):
    pass


class Unresolvable(OutboundError):
    pass


class FetchFailed(OutboundError):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status the server answered, when it answered an error."""


@dataclass(frozen=True, slots=True)
class OutboundPolicy:
    """Which destinations a chosen URL may reach: the public internet, and what is allowed."""

    hosts: frozenset[str] = frozenset()
    """Host names allowed whatever they resolve to (an intranet wiki)."""
    networks: tuple[IPNetwork, ...] = ()
    """Addresses and ranges allowed though not public."""

    @classmethod
    def parse(cls, allowlist: str) -> OutboundPolicy:
        """`OUTBOUND_ALLOWLIST`: host names, addresses or CIDR ranges, comma-separated."""
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for item in (part.strip() for part in allowlist.split(",")):
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item.strip("[]"), strict=False))
            except ValueError:
                hosts.add(item.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def allows_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def allows_address(self, address: IPAddress) -> bool:
        """Public unicast addresses; loopback, private, link-local, metadata and the rest only
        when allowed. An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) is judged as IPv4."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if any(address in network for network in self.networks):
            return True
        return address.is_global and not address.is_multicast


async def allowed_address(
    policy: OutboundPolicy, host: str, port: int, seconds: float | None
) -> IPAddress:
    """The address to dial for `host`: the first it resolves to that `policy` allows.

    Raises `Unresolvable` when the name does not resolve within `seconds`, and
    `BlockedDestination` when none of its addresses is allowed.
    """
    try:
        async with asyncio.timeout(seconds):
            found = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
    except (OSError, TimeoutError) as exc:
        raise Unresolvable(f"{host} could not be resolved") from exc
    addresses = [ipaddress.ip_address(info[4][0]) for info in found]
    if policy.allows_host(host):
        return addresses[0]
    allowed = [a for a in addresses if policy.allows_address(a)]
    if not allowed:
        raise BlockedDestination(
            f"{host} is a private, local or metadata address, which may not be fetched"
        )
    return allowed[0]


class GuardedNetwork(httpcore2.AsyncNetworkBackend):
    """httpcore's network layer, dialling only addresses the policy allows.

    TLS still names the host (httpcore sends the request's host as SNI and
    checks the certificate against it); only the address dialled is pinned.
    """

    def __init__(self, policy: OutboundPolicy, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._policy = policy
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            address = await allowed_address(self._policy, host, port, timeout)
        except Unresolvable as exc:
            raise httpcore2.ConnectError(str(exc)) from exc
        return await self._inner.connect_tcp(
            str(address), port, timeout, local_address, socket_options
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise BlockedDestination("Unix sockets are not reachable from outside")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


_CERTIFICATES_FROM_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")


def tls_context(trust_env: bool) -> ssl.SSLContext:
    """The certificates every client verifies servers with, read once for the process.

    httpx2 reads the system's CA bundle again for each transport it builds, 20 ms
    each: a tenth of a second of every start, with one client per model and the
    tools'. `trust_env` honours `SSL_CERT_FILE` and `SSL_CERT_DIR`, as httpx2 does;
    without them both kinds of client share one context.
    """
    return _read_certificates(trust_env and any(map(os.environ.get, _CERTIFICATES_FROM_ENV)))


@cache
def _read_certificates(from_env: bool) -> ssl.SSLContext:
    return httpx2.create_ssl_context(trust_env=from_env)


def transport_over(
    wrap: Callable[[httpcore2.AsyncNetworkBackend], httpcore2.AsyncNetworkBackend],
    *,
    pool: Callable[[httpcore2.AsyncConnectionPool], AsyncRequestInterface] | None = None,
    **options: Any,
) -> httpx2.AsyncHTTPTransport:
    """An httpx2 transport (built with `options`) whose connections go through `wrap(network)`.

    httpx2's transport takes no network backend, so its pool's own is wrapped
    in place; with `pool`, what it builds around httpx2's pool (which then only
    makes the connections) takes that pool's place. The one spot that reaches
    into httpx2's and httpcore's insides.
    """
    options.setdefault("verify", tls_context(options.get("trust_env", True)))
    transport = httpx2.AsyncHTTPTransport(**options)
    made = transport._pool
    assert isinstance(made, httpcore2.AsyncConnectionPool)
    made._network_backend = wrap(made._network_backend)
    if pool is not None:
        transport._pool = pool(made)  # type: ignore[assignment]  # httpx2 only calls its interface
    return transport


def guarded_client(
    policy: OutboundPolicy,
    *,
    timeout: float,
    max_redirects: int = 5,
    user_agent: str | None = None,
    max_connections: int = 100,
) -> httpx2.AsyncClient:
    """A client for chosen URLs: every connection checked, redirects followed (and checked).

    It keeps no cookies: one page's (or one redirect's) `Set-Cookie` is never sent
    on to the next request, so no state or credential travels between fetches.
    """
    # No proxy (`trust_env=False`): a proxy would dial for us, out of the guard's sight.
    transport = transport_over(
        lambda network: GuardedNetwork(policy, network),
        trust_env=False,
        limits=httpx2.Limits(max_connections=max_connections),
    )
    return httpx2.AsyncClient(
        transport=transport,
        trust_env=False,
        follow_redirects=True,
        max_redirects=max_redirects,
        timeout=timeout,
        headers={"User-Agent": user_agent} if user_agent else None,
        event_hooks={"request": [_without_cookies]},
    )


async def _without_cookies(request: httpx2.Request) -> None:
    """Called before every request, each redirect's too: httpx2 carries a redirect's
    `Set-Cookie` over to the next request whatever the client's jar refuses."""
    request.headers.pop("cookie", None)


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str
    """Where the body came from, after redirects."""
    status: int
    content_type: str
    body: bytes
    truncated: bool
    """The body was longer than `max_bytes`, and was cut there."""


async def fetch(
    client: httpx2.AsyncClient,
    url: str,
    *,
    max_bytes: int,
    seconds: float,
    refuse: Callable[[str], str | None] | None = None,
) -> Fetched:
    """GET `url` through a `guarded_client`, within `max_bytes` and `seconds` in all.

    `refuse(content_type)` may name a reason not to read a body of that type: the
    fetch then fails with it before a byte of the body is read.
    """
    if urlsplit(url).scheme not in ("http", "https"):
        raise FetchFailed("Only http and https URLs can be fetched")
    try:
        async with asyncio.timeout(seconds), client.stream("GET", url) as response:
            content_type = response.headers.get("content-type", "")
            reason = refuse(content_type) if refuse and response.status_code < 400 else None
            if reason:
                raise FetchFailed(reason)
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    break
            if response.status_code >= 400:
                raise FetchFailed(
                    f"The server answered HTTP {response.status_code}", response.status_code
                )
            return Fetched(
                url=str(response.url),
                status=response.status_code,
                content_type=content_type,
                body=bytes(body[:max_bytes]),
                truncated=len(body) > max_bytes,
            )
    except TimeoutError as exc:
        raise FetchFailed(f"No complete answer within {seconds:g} seconds") from exc
    except httpx2.TooManyRedirects as exc:
        raise FetchFailed("Too many redirects") from exc
    except httpx2.HTTPError as exc:
        raise FetchFailed(f"The page could not be fetched: {type(exc).__name__}") from exc
