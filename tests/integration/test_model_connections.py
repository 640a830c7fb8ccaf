"""The model client keeps its connections alive between calls, and notices one its server closed.

A provider closes idle keep-alive connections when it likes; a call sent
down such a connection would fail the turn. The client asks an idle
connection's socket before each use (`app/llm/http.py`). Its pool
(`app/llm/pool.py`) holds at most `LLM_MAX_CONNECTIONS`: a call beyond
them waits for one to come back, and every call gives its connection back,
however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import httpx2
import pytest
from pydantic import SecretStr

from app.config import Settings
from app.llm.http import build_http_client
from tests.support.tcp import tcp_server

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def settings(port: int, connections: int = 1000) -> Settings:
    return Settings(
        _env_file=None,
        llm_base_url=f"http://127.0.0.1:{port}/v1",
        llm_api_key=SecretStr("sk-fake"),
        llm_model="gpt-fake",
        llm_max_connections=connections,
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


@dataclass
class Held:
    """A client whose pool holds one connection, and a server whose `/v1/hold` waits."""

    client: httpx2.AsyncClient
    base: str
    connections: list[int]
    release: asyncio.Event


@contextlib.asynccontextmanager
async def one_connection() -> AsyncIterator[Held]:
    connections: list[int] = []
    release = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """`/v1/hold` streams "first", then the rest once `release` is set; anything else: "ok"."""
        connections.append(1)
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return
            if not head.startswith(b"GET /v1/hold "):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
                continue
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
            await writer.drain()
            await release.wait()
            writer.write(b"4\r\nrest\r\n0\r\n\r\n")
            await writer.drain()

    async with (
        tcp_server(handle) as port,
        build_http_client(settings(port, connections=1)) as client,
    ):
        yield Held(client, f"http://127.0.0.1:{port}/v1", connections, release)


async def test_a_call_beyond_the_pool_waits_for_a_connection_to_come_back() -> None:
    async with one_connection() as pool:
        async with pool.client.stream("GET", f"{pool.base}/hold") as held:
            chunks = held.aiter_bytes()  # kept: a dropped iterator closes its response
            assert await anext(chunks) == b"first"
            waiting = asyncio.create_task(pool.client.get(f"{pool.base}/models"))
            # It does not get through while the one connection is held.
            done, _ = await asyncio.wait({waiting}, timeout=0.05)
            assert not done
            pool.release.set()
            assert [chunk async for chunk in chunks] == [b"rest"]
        second = await asyncio.wait_for(waiting, 5)

    assert second.text == "ok"
    assert len(pool.connections) == 1  # the held call's connection, given back and used again


async def test_a_call_that_waits_too_long_for_a_connection_fails_with_a_pool_timeout() -> None:
    async with one_connection() as pool:
        async with pool.client.stream("GET", f"{pool.base}/hold") as held:
            chunks = held.aiter_bytes()
            assert await anext(chunks) == b"first"
            with pytest.raises(httpx2.PoolTimeout):
                await pool.client.get(f"{pool.base}/models", timeout=httpx2.Timeout(5, pool=0.05))
            pool.release.set()
            assert [chunk async for chunk in chunks] == [b"rest"]
        # The timed-out call left nothing behind: the next one gets the connection.
        assert (await pool.client.get(f"{pool.base}/models")).text == "ok"

    assert len(pool.connections) == 1


async def test_a_call_cancelled_mid_answer_gives_its_place_back() -> None:
    first_read = asyncio.Event()
    async with one_connection() as pool:

        async def read_held() -> None:
            async with pool.client.stream("GET", f"{pool.base}/hold") as held:
                async for _ in held.aiter_bytes():
                    first_read.set()

        reader = asyncio.create_task(read_held())
        await first_read.wait()
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        pool.release.set()
        # A connection cut mid-answer cannot be reused; its place in the pool can.
        answer = await asyncio.wait_for(pool.client.get(f"{pool.base}/models"), 5)

    assert answer.text == "ok"
    assert len(pool.connections) == 2
