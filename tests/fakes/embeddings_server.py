"""A local OpenAI-compatible embeddings endpoint (`POST /v1/embeddings`), deterministic.

Each text becomes a hashed bag of words: every word, after `SYNONYMS` maps
it to a canonical one, adds 1 to a dimension chosen by its md5. Texts that
share words are close; so are texts that say the same with a synonym, which
BM25 cannot see, so tests can tell hybrid search from BM25 alone. Answers
follow OpenAI's documented shape (`data[].index`, `data[].embedding`).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support.server import serve

DIMENSIONS = 256
SYNONYMS = {
    "automobile": "car",
    "vehicle": "car",
    "fixed": "repaired",
    "mended": "repaired",
}


def embed(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        word = SYNONYMS.get(word, word)
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    return vector


@dataclass
class FakeEmbeddings:
    inputs: list[list[str]] = field(default_factory=list)
    """The `input` of each request, in order."""
    auth_headers: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    fail_status: int | None = None
    """When set, every request answers this status with an OpenAI error body."""
    reverse: bool = False
    """Answer `data` in reverse order (still with the right `index`), as servers may."""
    base_url: str = ""

    async def _embeddings(self, request: Request) -> JSONResponse:
        body: dict[str, Any] = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.inputs.append(texts)
        self.auth_headers.append(request.headers.get("authorization", ""))
        self.models.append(body.get("model", ""))
        if self.fail_status is not None:
            error = {"error": {"message": "fake embeddings failure", "type": "server_error"}}
            return JSONResponse(error, status_code=self.fail_status)
        data = [
            {"object": "embedding", "index": i, "embedding": embed(t)} for i, t in enumerate(texts)
        ]
        if self.reverse:
            data.reverse()
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return JSONResponse(
            {"object": "list", "data": data, "model": body.get("model"), "usage": usage}
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[FakeEmbeddings]:
        app = Starlette(routes=[Route("/v1/embeddings", self._embeddings, methods=["POST"])])
        async with serve(app, lifespan="off") as url:
            self.base_url = f"{url}/v1"
            yield self
