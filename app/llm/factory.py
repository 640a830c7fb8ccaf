"""The models' part of the app: every configured model, the pooled client the tools call
out on, the embeddings client and the token counter, open until the lifespan's stack closes.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Protocol

import httpx2

from app.config import Settings
from app.llm.base import ChatModel
from app.llm.catalog import CatalogSpec
from app.llm.embeddings import OpenAIEmbeddings, build_embedder
from app.llm.http import build_http_client
from app.llm.models import ModelCatalog, open_catalog
from app.llm.tokens import TokenCounter, install_encodings

log = logging.getLogger("app")


class ModelWatcher(Protocol):
    def watch_model(self, model: ChatModel) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Models:
    catalog: ModelCatalog
    http: httpx2.AsyncClient
    """The pooled client for tools' HTTP calls (not the models')."""
    embedder: OpenAIEmbeddings | None
    """None without `EMBEDDING_BASE_URL`: documents are then searched by their words."""
    tokens: TokenCounter


async def build(
    settings: Settings,
    *,
    stack: AsyncExitStack,
    spec: CatalogSpec,
    model: ChatModel | None,
    observer: ModelWatcher,
) -> Models:
    """The models of `spec` (read from the settings by `create_app`); `model` replaces the
    `LLM_*` one (a test's scripted model). `observer` watches each (the telemetry)."""
    install_encodings(settings.data_dir / "tiktoken")
    catalog = await stack.enter_async_context(open_catalog(spec, settings, model))
    # `default` last: the one hook the telemetry keeps telling is its own (a test's).
    for each in reversed(catalog.models().values()):
        observer.watch_model(each)
    if not catalog.default.config.configured:
        log.warning("no language model configured: set LLM_BASE_URL and/or LLM_API_KEY")
    http = await stack.enter_async_context(build_http_client(settings))
    return Models(
        catalog=catalog,
        http=http,
        embedder=build_embedder(settings, http),
        tokens=TokenCounter(),
    )
