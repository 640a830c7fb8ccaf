"""The in-process server the tests serve apps with, when an app cannot start.

uvicorn answers a failed start-up with `SystemExit`, which asyncio lets out of
the event loop: once, a database that stalled at one test's start-up ended
pytest's loop and failed the 68 tests after it. It must fail its own test only.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.support.server import serve


@contextlib.asynccontextmanager
async def _no_database(app: Starlette) -> AsyncIterator[None]:
    raise ConnectionRefusedError("the database did not answer")
    yield


async def _hello(_: object) -> PlainTextResponse:
    return PlainTextResponse("hello")


async def _ask(app: Starlette) -> str:
    async with serve(app) as url, httpx.AsyncClient(timeout=30) as client:
        return (await client.get(url)).text


async def test_an_app_that_cannot_start_fails_its_own_test_and_the_next_serves() -> None:
    with pytest.raises(RuntimeError, match="did not start") as failed:
        await _ask(Starlette(lifespan=_no_database))
    # The client waiting in the closed socket's backlog was refused, not left to time out.
    refused = failed.value.__context__
    assert refused is not None
    assert not isinstance(refused, httpx.TimeoutException)
    assert await _ask(Starlette(routes=[Route("/", _hello)])) == "hello"
