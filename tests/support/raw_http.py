"""A raw HTTP/1.1 client for requests no HTTP library sends: a head or a body cut short,
left hanging, or trickled, the way a broken or hostile client sends them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit


def request_head(method: str, path: str, body_bytes: int, content_type: str) -> bytes:
    """A complete head declaring a body of `body_bytes`."""
    return (
        f"{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {body_bytes}\r\n\r\n"
    ).encode()


@contextlib.asynccontextmanager
async def connection(
    base_url: str,
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """A TCP connection to the server at `base_url`, closed at the end."""
    parts = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def send_and_hang_up(base_url: str, data: bytes) -> None:
    """Send `data` (a request cut short) and close the connection."""
    async with connection(base_url) as (_, writer):
        writer.write(data)
        await writer.drain()
