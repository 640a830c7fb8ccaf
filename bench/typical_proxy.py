"""The second yardstick: a model's tokens relayed as SSE the way FastAPI's documentation writes it.

Issue 59's "typical FastAPI SSE proxy": a path operation that yields pydantic
models under `response_class=EventSourceResponse` (FastAPI validates and
encodes each one, and runs the keep-alive pings), one pooled `httpx2`
client, the upstream's lines read with `aiter_lines` and parsed with the
standard `json`, each content delta re-sent as `data: {"type":"text","content":…}`,
nothing stored. `bench/proxy.py` is the other yardstick, the least such a
relay can do; bench/README.md says which ratio uses which. The pool is sized
like the relay's (`BENCH_POOL`), not httpx's default of 100, which would
fail the thousand-stream scenario's 101st stream after its 5 s pool wait.

    BENCH_UPSTREAM_URL=http://127.0.0.1:9000/v1 uvicorn bench.typical_proxy:app --port 9001
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

import httpx2
from fastapi import FastAPI, Request
from fastapi.sse import EventSourceResponse
from pydantic import BaseModel

UPSTREAM = os.environ.get("BENCH_UPSTREAM_URL", "http://127.0.0.1:9000/v1") + "/chat/completions"
POOL = int(os.environ.get("BENCH_POOL", "1000"))


class TextDelta(BaseModel):
    type: Literal["text"] = "text"
    content: str


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    limits = httpx2.Limits(max_connections=POOL, max_keepalive_connections=POOL)
    async with httpx2.AsyncClient(limits=limits, timeout=60) as client:
        app.state.client = client
        yield


app = FastAPI(lifespan=lifespan)


@app.get("/agent/chat/stream", response_class=EventSourceResponse)
async def relay(query: str, request: Request) -> AsyncIterable[TextDelta]:
    client: httpx2.AsyncClient = request.app.state.client
    body = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": query}]}
    async with client.stream("POST", UPSTREAM, json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choices = json.loads(line[6:])["choices"]
            if choices and (content := choices[0]["delta"].get("content")):
                yield TextDelta(content=content)
