"""The yardstick: the least a FastAPI service can do to relay a model's tokens as SSE.

One route, one pooled httpx client, each upstream chunk's text re-sent as a
`{"type":"text","content":…}` frame, no database, no task registry, no
agent. Whatever the real service costs beyond this is what its features
cost. `BENCH_HTTPX=httpx2` swaps in the `httpx2` fork (what the service
uses) to price the client.

    BENCH_UPSTREAM_URL=http://127.0.0.1:9000/v1 uvicorn bench.proxy:app --port 9001
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

httpx: Any = importlib.import_module(os.environ.get("BENCH_HTTPX", "httpx"))
UPSTREAM = os.environ.get("BENCH_UPSTREAM_URL", "http://127.0.0.1:9000/v1") + "/chat/completions"
POOL = int(os.environ.get("BENCH_POOL", "1000"))


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    limits = httpx.Limits(max_connections=POOL, max_keepalive_connections=POOL)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        app.state.client = client
        yield


app = FastAPI(lifespan=lifespan)


@app.get("/agent/chat/stream")
async def relay(query: str, request: Request) -> StreamingResponse:
    body = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": query}]}
    client = request.app.state.client

    async def frames() -> AsyncIterator[bytes]:
        async with client.stream("POST", UPSTREAM, content=orjson.dumps(body)) as response:
            pending = b""
            async for raw in response.aiter_bytes():
                lines = (pending + raw).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if not line.startswith(b"data: {"):
                        continue
                    choices = orjson.loads(line[6:])["choices"]
                    text = choices[0]["delta"].get("content") if choices else None
                    if text:
                        yield b"data: %b\n\n" % orjson.dumps({"type": "text", "content": text})

    return StreamingResponse(frames(), media_type="text/event-stream")
