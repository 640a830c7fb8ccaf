"""The SSRF guard: a chosen URL never reaches the service's own network, redirects included.

Servers on loopback stand in for what must not be reached (Redis, a
database, a metadata service): each counts the connections it accepts, and
a refused fetch must leave that count at zero, not merely fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from app.core.outbound import (
    BlockedDestination,
    FetchFailed,
    OutboundPolicy,
    fetch,
    guarded_client,
    tls_context,
)
from tests.support.tcp import tcp_server


@dataclass
class CountingServer:
    url: str
    connections: int = 0


@contextlib.asynccontextmanager
async def counting_server(
    host: str = "127.0.0.1", answer: bytes | None = b"hello", location: str | None = None
) -> AsyncIterator[CountingServer]:
    """A one-answer HTTP server counting connections; `answer=None` never answers."""
    server_state = CountingServer("")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server_state.connections += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(response())
        await writer.drain()
        if answer is None:
            await reader.read()

    def response() -> bytes:
        if answer is None:
            return b""
        if location is not None:
            return (
                f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode()
            )
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(answer)}"
        return head.encode() + b"\r\n\r\n" + answer

    async with tcp_server(handle, host) as port:
        server_state.url = f"http://{host}:{port}/"
        yield server_state


async def get(url: str, allowlist: str = "", max_bytes: int = 1000, seconds: float = 5) -> bytes:
    policy = OutboundPolicy.parse(allowlist)
    async with guarded_client(policy, timeout=seconds) as client:
        fetched = await fetch(client, url, max_bytes=max_bytes, seconds=seconds)
    return fetched.body


@pytest.mark.parametrize(
    "spelling",
    ["127.0.0.1", "localhost", "0.0.0.0", "[::ffff:127.0.0.1]", "2130706433"],
    ids=["address", "name", "any", "v4-in-v6", "decimal"],
)
async def test_loopback_is_refused_however_it_is_spelled(spelling: str) -> None:
    async with counting_server() as target:
        port = target.url.rsplit(":", 1)[1]
        with pytest.raises(BlockedDestination, match="private, local or metadata address"):
            await get(f"http://{spelling}:{port}")

    assert target.connections == 0


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://[::1]/",
        "http://[fe80::1]/",
    ],
)
async def test_metadata_private_and_link_local_addresses_are_refused(url: str) -> None:
    with pytest.raises(BlockedDestination):
        await get(url, seconds=1)


async def test_a_host_that_does_not_resolve_is_a_failed_fetch() -> None:
    # `.invalid` never resolves (RFC 6761): a connection error, as for a host that is down.
    with pytest.raises(FetchFailed, match="could not be fetched: ConnectError"):
        await get("https://page.invalid/", seconds=2)


async def test_a_redirect_into_the_private_network_is_refused() -> None:
    async with (
        counting_server() as inside,
        counting_server("127.0.0.2", location=inside.url) as allowed,
    ):
        with pytest.raises(BlockedDestination):
            await get(allowed.url, allowlist="127.0.0.2")

    assert allowed.connections == 1
    assert inside.connections == 0


async def test_the_allowlist_opens_named_addresses_and_ranges_only() -> None:
    async with counting_server() as target, counting_server("127.0.0.3") as other:
        by_address = await get(target.url, allowlist="127.0.0.1")
        by_range = await get(target.url, allowlist="10.0.0.0/8, 127.0.0.0/30")
        with pytest.raises(BlockedDestination):
            await get(other.url, allowlist="127.0.0.1")

    assert by_address == by_range == b"hello"
    assert target.connections == 2
    assert other.connections == 0


async def test_a_fetch_is_bounded_in_size_and_time() -> None:
    policy = OutboundPolicy.parse("127.0.0.1")
    async with (
        counting_server(answer=b"x" * 1_000_000) as large,
        counting_server(answer=None) as silent,
        guarded_client(policy, timeout=5) as client,
    ):
        fetched = await fetch(client, large.url, max_bytes=1000, seconds=5)
        with pytest.raises(FetchFailed, match=r"No complete answer within 0\.2 seconds"):
            await fetch(client, silent.url, max_bytes=1000, seconds=0.2)
        with pytest.raises(FetchFailed, match="Only http and https"):
            await fetch(client, "file:///etc/passwd", max_bytes=1000, seconds=5)

    assert (len(fetched.body), fetched.truncated) == (1000, True)


def test_every_client_verifies_with_one_reading_of_the_certificates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each client used to read the system's CA bundle again (20 ms of every start, per
    client); where the environment names certificates (SSL_CERT_FILE), the clients that
    trust it still read those."""
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    shared = tls_context(trust_env=True)
    assert shared is tls_context(trust_env=False) is tls_context(trust_env=True)
    assert shared.verify_mode == ssl.CERT_REQUIRED
    assert shared.check_hostname

    monkeypatch.setenv("SSL_CERT_FILE", ssl.get_default_verify_paths().openssl_cafile)
    assert tls_context(trust_env=True) is not shared
    assert tls_context(trust_env=False) is shared
