"""A webhook receiver on 127.0.0.1: what a caller's server does with our signed calls.

The outbound guard refuses 127.0.0.1 unless `OUTBOUND_ALLOWLIST` names it,
as it would refuse a private address in production.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.server import serve

SECRET = "whsec-test-0123456789"


@dataclass
class Call:
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Receiver:
    url: str = ""
    statuses: list[int] = field(default_factory=list)
    """What the next calls answer, in order; 200 once they run out."""
    calls: asyncio.Queue[Call] = field(default_factory=asyncio.Queue)

    async def receive(self, request: Request) -> Response:
        await self.calls.put(Call(dict(request.headers), await request.body()))
        return Response(status_code=self.statuses.pop(0) if self.statuses else 200)

    async def next_call(self) -> Call:
        async with asyncio.timeout(10):
            return await self.calls.get()


@contextlib.asynccontextmanager
async def running_receiver() -> AsyncIterator[Receiver]:
    hooks = Receiver()
    app = Starlette(routes=[Route("/hook", hooks.receive, methods=["POST"])])
    async with serve(app) as url:
        hooks.url = f"{url}/hook"
        yield hooks


def verified(call: Call, secret: str = SECRET) -> bool:
    """What a receiver does: recompute the signature over the timestamp and the body."""
    stamp = call.headers["x-webhook-timestamp"]
    mac = hmac.new(secret.encode(), stamp.encode() + b"." + call.body, hashlib.sha256)
    expected = "sha256=" + mac.hexdigest()
    fresh = abs(time.time() - int(stamp)) < 60
    return fresh and hmac.compare_digest(expected, call.headers["x-webhook-signature"])
