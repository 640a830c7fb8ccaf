"""The model client's own network layer (`app/llm/network.py`), on both event loops we run on.

The service runs on uvloop wherever uvicorn finds it, and the tests run on
asyncio's own loop, so each behaviour here is checked on both: an answer
larger than the connection's buffer arrives whole, a server that goes
silent is a read timeout, one that hangs up mid-answer is an error, a port
nobody listens on is a connect error, and HTTPS works (the layer starts TLS
itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ssl
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvloop
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.core.outbound import transport_over
from app.llm.network import _PAUSE_BYTES, AsyncioNetwork
from tests.support.tcp import tcp_server

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def on(loop: str, test: Coroutine[Any, Any, None]) -> None:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        runner.run(test)


def client(read_timeout: float = 5.0, **options: Any) -> httpx2.AsyncClient:
    transport = transport_over(lambda _: AsyncioNetwork(), **options)
    return httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(5.0, read=read_timeout))


def answering(body: bytes, *, then: Callable[[asyncio.StreamWriter], Awaitable[None]]) -> Handler:
    """A server that reads one request, sends the head and `body`, then does `then`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4000000\r\n\r\n" + body)
        await writer.drain()
        await then(writer)

    return handle


@pytest.mark.parametrize("loop", LOOPS)
def test_an_answer_larger_than_the_buffer_arrives_whole_when_read_slowly(loop: str) -> None:
    body = bytes(range(256)) * (4_000_000 // 256) + b"\x00" * (4_000_000 % 256)
    assert len(body) > 10 * _PAUSE_BYTES

    async def send(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        writer.write(body)
        await writer.drain()

    async def test() -> None:
        async with tcp_server(send) as port, client() as http:
            received = bytearray()
            async with http.stream("GET", f"http://127.0.0.1:{port}/") as response:
                async for chunk in response.aiter_raw():
                    received += chunk
                    if len(received) < 2 * _PAUSE_BYTES:
                        await asyncio.sleep(0.01)  # the server outruns the reader
            assert received == body

    on(loop, test())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_server_that_goes_silent_mid_answer_is_a_read_timeout(loop: str) -> None:
    silent = asyncio.Event()

    async def wait(writer: asyncio.StreamWriter) -> None:
        await silent.wait()

    async def test() -> None:
        async with tcp_server(answering(b"data: one\n\n", then=wait)) as port:
            async with (
                client(read_timeout=0.2) as http,
                http.stream("GET", f"http://127.0.0.1:{port}/") as response,
            ):
                chunks = response.aiter_raw()
                assert await anext(chunks) == b"data: one\n\n"
                with pytest.raises(httpx2.ReadTimeout):
                    await anext(chunks)
            silent.set()

    on(loop, test())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_server_that_hangs_up_mid_answer_is_an_error_not_a_short_answer(loop: str) -> None:
    async def hang_up(writer: asyncio.StreamWriter) -> None:
        writer.close()

    async def test() -> None:
        async with tcp_server(answering(b"partial", then=hang_up)) as port, client() as http:
            with pytest.raises(httpx2.RemoteProtocolError):
                await http.get(f"http://127.0.0.1:{port}/")

    on(loop, test())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_port_nobody_listens_on_is_a_connect_error(loop: str) -> None:
    async def nobody(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        return

    async def test() -> None:
        async with tcp_server(nobody) as port:
            pass  # the port was free a moment ago, and is again
        async with client() as http:
            with pytest.raises(httpx2.ConnectError):
                await http.get(f"http://127.0.0.1:{port}/")

    on(loop, test())


@pytest.mark.parametrize("loop", LOOPS)
def test_https_answers_through_the_layers_own_tls(loop: str, tmp_path: Path) -> None:
    server_tls, client_tls = tls_pair(tmp_path)
    connections: list[int] = []

    async def hello(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                await writer.drain()
        writer.close()

    async def test() -> None:
        server = await asyncio.start_server(hello, "127.0.0.1", 0, ssl=server_tls)
        port = server.sockets[0].getsockname()[1]
        async with server, client(verify=client_tls) as http:
            response = await http.get(f"https://localhost:{port}/")
            assert response.text == "hello"
            again = await http.get(f"https://localhost:{port}/")
            assert again.text == "hello"
        assert connections == [1]  # the second call went down the first one's connection

    on(loop, test())


def tls_pair(folder: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a self-signed certificate for `localhost`, and a client trusting it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    trusting = ssl.create_default_context(cafile=str(cert_file))
    return server, trusting
