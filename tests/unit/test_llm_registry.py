"""From settings to a model: which class, which endpoint, which defaults.

The rule worth pinning: an empty base URL means OpenAI's own endpoint only
when a key is set; with neither, the model is "not configured" (the service
still starts, and says so on the first question) rather than calling out.
"""

from __future__ import annotations

import httpx2 as httpx
import pytest
from pydantic import SecretStr

from app.config import Settings
from app.llm.base import RetryPolicy
from app.llm.http import build_http_client
from app.llm.openai import OpenAIChatModel
from app.llm.registry import build_chat_model


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


async def test_openai_with_a_key_defaults_to_openai_endpoint() -> None:
    config = settings(
        llm_api_key=SecretStr("sk-x"),
        llm_max_retries=5,
        llm_retry_max_delay_seconds=2.5,
        llm_temperature=0.3,
        llm_max_tokens=512,
    )
    async with httpx.AsyncClient() as client:
        model = build_chat_model(config, client)
    assert isinstance(model, OpenAIChatModel)
    assert model.config.base_url == "https://api.openai.com/v1"
    assert model.config.model == "gpt-4o-mini"
    assert model.config.retry == RetryPolicy(max_retries=5, max_delay=2.5)
    assert model.config.defaults == {"temperature": 0.3, "max_tokens": 512}


async def test_without_key_or_url_the_model_is_not_configured() -> None:
    async with httpx.AsyncClient() as client:
        model = build_chat_model(settings(llm_api_key=SecretStr("")), client)
    assert not model.config.configured
    assert model.config.defaults == {}


async def test_a_local_server_needs_no_key() -> None:
    config = settings(llm_base_url="http://127.0.0.1:11434/v1/", llm_model="qwen3")
    async with httpx.AsyncClient() as client:
        model = build_chat_model(config, client)
    assert model.config.base_url == "http://127.0.0.1:11434/v1"
    assert model.config.model == "qwen3"
    assert model.config.configured


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "dashscope"])
async def test_providers_not_built_yet_fail_clearly(provider: str) -> None:
    async with httpx.AsyncClient() as client:
        with pytest.raises(ValueError, match=f"LLM_PROVIDER='{provider}' is not available yet"):
            build_chat_model(settings(llm_provider=provider), client)


async def test_http_client_pool_and_timeouts_come_from_settings() -> None:
    config = settings(
        llm_max_connections=7, llm_timeout_seconds=42.0, llm_connect_timeout_seconds=3.0
    )
    async with build_http_client(config) as client:
        assert client.timeout == httpx.Timeout(42.0, connect=3.0, pool=42.0)
        # httpx exposes no public view of its limits; the pool is what enforces them.
        pool = client._transport._pool  # type: ignore[attr-defined]
        assert (pool._max_connections, pool._max_keepalive_connections) == (7, 7)
