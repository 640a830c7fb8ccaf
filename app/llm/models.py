"""The catalog's models, each with its own client, for the app's life.

Each entry of `MODELS` (and the `LLM_*` model, `default`) gets its own
`ChatModel` over its own connection pool, so a slow local model never holds
the connections of a hosted one, and its retries, timeout, structured-output
mode (a refusal of the native one is remembered per model) and token counter
are its own. A turn picks one by id (`choose`); deep research's roles may take
others (`role`). Prices turn a model's usage into dollars (`cost_usd`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager

from app.config import Settings
from app.core.responses import Usage
from app.llm.base import ChatModel
from app.llm.catalog import CatalogSpec, Role
from app.llm.errors import ModelError
from app.llm.http import build_http_client
from app.llm.model_entry import DEFAULT_MODEL_ID, ModelEntry
from app.llm.registry import build_chat_model


class UnknownModel(ValueError):
    """A turn named a model id the catalog does not list."""

    def __init__(self, model_id: str, known: list[str]) -> None:
        super().__init__(
            f"Unknown model {model_id[:64]!r}; this service offers: {', '.join(known)}"
        )
        self.model_id = model_id


class ModelCatalog:
    """Every configured model by id, and which one a turn or a role takes."""

    def __init__(self, spec: CatalogSpec, models: Mapping[str, ChatModel]) -> None:
        self.spec = spec
        self._models = dict(models)

    @property
    def default(self) -> ChatModel:
        return self._models[DEFAULT_MODEL_ID]

    def entries(self) -> tuple[ModelEntry, ...]:
        return self.spec.entries

    def get(self, model_id: str) -> ChatModel:
        model = self._models.get(model_id)
        if model is None:
            raise UnknownModel(model_id, self.spec.ids())
        return model

    def ids(self) -> frozenset[str]:
        return frozenset(self._models)

    def models(self) -> dict[str, ChatModel]:
        return dict(self._models)

    def choose(self, kind: str, requested: str | None) -> str:
        """The id a turn of `kind` takes: the one it names, else `AGENT_MODELS`', else `default`."""
        if requested:
            self.get(requested)
            return requested
        return self.spec.agent_models.get(kind, DEFAULT_MODEL_ID)

    def role(self, role: Role, turn_model: str) -> str:
        """The id deep research's `role` takes in a turn of `turn_model` (`DEEP_*_MODEL`)."""
        return self.spec.roles.get(role, turn_model)

    def cost_usd(self, model_id: str, usage: Usage) -> float | None:
        entry = self.spec.entry(model_id)
        if entry is None:
            return None
        return entry.cost_usd(usage.prompt_tokens, usage.completion_tokens)

    async def check(self) -> dict[str, ModelError | None]:
        """Each model's one-token call: None where it answered, else its error."""
        results: dict[str, ModelError | None] = {}
        for model_id, model in self._models.items():
            try:
                await model.check()
                results[model_id] = None
            except ModelError as exc:
                results[model_id] = exc
        return results


@asynccontextmanager
async def open_catalog(
    spec: CatalogSpec, settings: Settings, default: ChatModel | None = None
) -> AsyncIterator[ModelCatalog]:
    """Each entry's model over its own pool, closed on exit; `default` replaces the `LLM_*` one
    (a test's scripted model)."""
    async with AsyncExitStack() as stack:
        models: dict[str, ChatModel] = {}
        for entry in spec.entries:
            if entry.id == DEFAULT_MODEL_ID and default is not None:
                models[entry.id] = default
                continue
            client = await stack.enter_async_context(
                build_http_client(settings, entry.max_connections)
            )
            models[entry.id] = build_chat_model(settings, client, entry=entry)
        yield ModelCatalog(spec, models)
