"""Which `ChatModel` class serves `LLM_PROVIDER`, and its `ModelConfig` from the settings.

Adding a provider is one module and one line in `PROVIDERS`. Providers named
in the settings but not built yet fail at start-up with a clear message
rather than at the first question.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx2 as httpx

from app.config import Settings
from app.core.tools import GenerateOptions
from app.llm.base import ChatModel, ModelConfig, ModelObserver, RetryPolicy
from app.llm.openai import OpenAIChatModel


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    model_class: type[ChatModel]
    default_base_url: str
    """Used only when a key is set: without one, an empty base URL means "not configured"."""
    default_model: str


PROVIDERS: dict[str, ProviderSpec] = {
    "openai": ProviderSpec(OpenAIChatModel, "https://api.openai.com/v1", "gpt-4o-mini"),
}


def build_chat_model(
    settings: Settings, client: httpx.AsyncClient, observer: ModelObserver | None = None
) -> ChatModel:
    spec = PROVIDERS.get(settings.llm_provider)
    if spec is None:
        raise ValueError(
            f"LLM_PROVIDER={settings.llm_provider!r} is not available yet; "
            f"choose one of: {', '.join(sorted(PROVIDERS))}"
        )
    return spec.model_class(model_config(settings, spec), client, observer)


def model_config(settings: Settings, spec: ProviderSpec) -> ModelConfig:
    base_url = settings.llm_base_url.rstrip("/")
    if not base_url and settings.llm_api_key.get_secret_value():
        base_url = spec.default_base_url
    defaults = GenerateOptions()
    if settings.llm_temperature is not None:
        defaults["temperature"] = settings.llm_temperature
    if settings.llm_max_tokens is not None:
        defaults["max_tokens"] = settings.llm_max_tokens
    return ModelConfig(
        provider=settings.llm_provider,
        base_url=base_url,
        api_key=settings.llm_api_key,
        model=settings.llm_model or spec.default_model,
        retry=RetryPolicy(
            max_retries=settings.llm_max_retries,
            max_delay=settings.llm_retry_max_delay_seconds,
        ),
        defaults=defaults,
    )
