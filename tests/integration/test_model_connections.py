"""The model client keeps its connections alive between calls, and notices one its server closed.

A provider closes idle keep-alive connections when it likes; a call sent
down such a connection would fail the turn. The client asks an idle
connection's socket before each use (`app/llm/http.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from pydantic import SecretStr

from app.config import Settings
from app.llm.http import build_http_client
from tests.support.tcp import tcp_server

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def settings(port: int) -> Settings:
    return Settings(
        _env_file=None,
        llm_base_url=f"http://127.0.0.1:{port}/v1",
        llm_api_key=SecretStr("sk-fake"),
        llm_model="gpt-fake",
    )


def server(connections: list[int], *, close_after_answer: asyncio.Event | None) -> Handler:
    """Answers "ok" to each request; with `close_after_answer`, closes after its first answer."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return  # the client hung up
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            if close_after_answer is not None:
                writer.close()
                await writer.wait_closed()
                close_after_answer.set()
                return

    return handle


async def test_a_connection_its_server_closed_is_replaced_not_used() -> None:
    connections: list[int] = []
    closed = asyncio.Event()
    async with (
        tcp_server(server(connections, close_after_answer=closed)) as port,
        build_http_client(settings(port)) as client,
    ):
        first = await client.get(f"http://127.0.0.1:{port}/v1/models")
        await closed.wait()
        closed.clear()
        second = await client.get(f"http://127.0.0.1:{port}/v1/models")
        await closed.wait()

    assert (first.text, second.text) == ("ok", "ok")
    assert len(connections) == 2


async def test_an_open_connection_serves_the_next_call() -> None:
    connections: list[int] = []
    async with (
        tcp_server(server(connections, close_after_answer=None)) as port,
        build_http_client(settings(port)) as client,
    ):
        answers = [(await client.get(f"http://127.0.0.1:{port}/v1/models")).text for _ in range(3)]

    assert answers == ["ok"] * 3
    assert len(connections) == 1
