"""Text embeddings from an OpenAI-compatible `POST /embeddings` endpoint.

OpenAI, vLLM, Ollama, DashScope's and GLM's compatible modes all answer
`{"data": [{"index": i, "embedding": [...]}, ...]}`; texts go in batches of
`EMBEDDING_BATCH_SIZE`, vectors come back in input order.
With `EMBEDDING_BASE_URL` empty there is no embedder and documents are
searched by BM25 alone.

Failures raise `EmbeddingError` with the status or error class, never the
key or the provider's body; callers treat embeddings as an improvement and
carry on without them. Left out: retries (an upload or search simply goes
on without vectors), token counting and truncation (passages are short).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx2
import orjson
from pydantic import SecretStr

from app.config import Settings


class EmbeddingError(Exception):
    pass


class OpenAIEmbeddings:
    def __init__(
        self,
        client: httpx2.AsyncClient,
        base_url: str,
        api_key: SecretStr,
        model: str,
        batch_size: int = 64,
    ) -> None:
        self._client = client
        self._url = base_url.rstrip("/") + "/embeddings"
        self._key = api_key
        self._model = model
        self._batch_size = batch_size

    @property
    def model(self) -> str:
        return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(await self._batch(texts[start : start + self._batch_size]))
        return vectors

    async def _batch(self, texts: Sequence[str]) -> list[list[float]]:
        headers = {}
        if self._key.get_secret_value():
            headers["Authorization"] = f"Bearer {self._key.get_secret_value()}"
        try:
            response = await self._client.post(
                self._url, json={"model": self._model, "input": list(texts)}, headers=headers
            )
        except httpx2.HTTPError as exc:
            raise EmbeddingError(f"embeddings request failed ({type(exc).__name__})") from exc
        if response.status_code != 200:
            raise EmbeddingError(f"embeddings request failed (HTTP {response.status_code})")
        try:
            items: list[dict[str, Any]] = orjson.loads(response.content)["data"]
            ordered = sorted(items, key=lambda item: int(item["index"]))
            vectors = [[float(x) for x in item["embedding"]] for item in ordered]
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError("the embeddings answer could not be read") from exc
        if len(vectors) != len(texts):
            raise EmbeddingError(f"asked for {len(texts)} embeddings, got {len(vectors)}")
        return vectors


def build_embedder(settings: Settings, client: httpx2.AsyncClient) -> OpenAIEmbeddings | None:
    if not settings.embedding_base_url:
        return None
    return OpenAIEmbeddings(
        client,
        settings.embedding_base_url,
        settings.embedding_api_key,
        settings.embedding_model,
        settings.embedding_batch_size,
    )
