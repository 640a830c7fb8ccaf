"""From settings to a model: which class, which endpoint, which defaults.

The rule worth pinning: an empty base URL means the provider's own endpoint
only when a key is set (or the server is local); with neither, the model is
"not configured" (the service still starts, and says so on the first
question) rather than calling out.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import httpx2
import pytest
from pydantic import SecretStr

from app.config import Provider, Settings
from app.core.messages import Msg
from app.core.responses import Usage
from app.core.urls import public_url
from app.llm.anthropic import AnthropicChatModel
from app.llm.base import ChatModel, RetryPolicy
from app.llm.dashscope import DashScopeChatModel
from app.llm.gemini import GeminiChatModel
from app.llm.http import build_http_client
from app.llm.openai import OpenAIChatModel
from app.llm.registry import PROVIDERS, build_chat_model
from tests.fakes.mock_transport import run, streamed
from tests.fakes.openai_wire import delta_chunk, sse, usage_chunk


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
    async with httpx2.AsyncClient() as client:
        model = build_chat_model(config, client)
    assert isinstance(model, OpenAIChatModel)
    assert model.config.base_url == "https://api.openai.com/v1"
    assert model.config.model == "gpt-4o-mini"
    assert model.config.retry == RetryPolicy(max_retries=5, max_delay=2.5)
    assert model.config.defaults == {"temperature": 0.3, "max_tokens": 512}


async def test_without_key_or_url_the_model_is_not_configured() -> None:
    async with httpx2.AsyncClient() as client:
        model = build_chat_model(settings(llm_api_key=SecretStr("")), client)
    assert not model.config.configured
    assert model.config.defaults == {}


async def test_a_local_server_needs_no_key() -> None:
    config = settings(llm_base_url="http://127.0.0.1:11434/v1/", llm_model="qwen3")
    async with httpx2.AsyncClient() as client:
        model = build_chat_model(config, client)
    assert model.config.base_url == "http://127.0.0.1:11434/v1"
    assert model.config.model == "qwen3"
    assert model.config.configured


def test_every_provider_setting_has_a_registry_line() -> None:
    assert set(get_args(Provider)) == set(PROVIDERS)


@pytest.mark.parametrize(
    ("provider", "model_class", "base_url", "model"),
    [
        ("anthropic", AnthropicChatModel, "https://api.anthropic.com/v1", "claude-sonnet-4-5"),
        (
            "gemini",
            GeminiChatModel,
            "https://generativelanguage.googleapis.com/v1beta",
            "gemini-2.5-flash",
        ),
        ("dashscope", DashScopeChatModel, "https://dashscope.aliyuncs.com/api/v1", "qwen-plus"),
        ("deepseek", OpenAIChatModel, "https://api.deepseek.com/v1", "deepseek-chat"),
        ("glm", OpenAIChatModel, "https://open.bigmodel.cn/api/paas/v4", "glm-4.6"),
        (
            "qwen",
            OpenAIChatModel,
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "qwen-plus",
        ),
    ],
)
async def test_a_provider_and_a_key_are_a_whole_configuration(
    provider: str, model_class: type[ChatModel], base_url: str, model: str
) -> None:
    async with httpx2.AsyncClient() as client:
        chat = build_chat_model(settings(llm_provider=provider, llm_api_key="k-1"), client)
    assert type(chat) is model_class
    assert (chat.config.provider, chat.config.base_url, chat.config.model) == (
        provider,
        base_url,
        model,
    )
    assert chat.config.timeout == 60.0


@pytest.mark.parametrize(("provider", "port"), [("ollama", 11434), ("vllm", 8000)])
async def test_local_servers_need_no_key_but_a_model_name(provider: str, port: int) -> None:
    async with httpx2.AsyncClient() as client:
        with pytest.raises(ValueError, match=f"LLM_PROVIDER={provider} needs LLM_MODEL"):
            build_chat_model(settings(llm_provider=provider), client)
        chat = build_chat_model(settings(llm_provider=provider, llm_model="qwen3:8b"), client)
    assert isinstance(chat, OpenAIChatModel)
    assert chat.config.configured
    assert chat.config.base_url == f"http://localhost:{port}/v1"
    assert chat.config.timeout == 300.0


async def test_a_given_timeout_replaces_the_providers_default() -> None:
    async with httpx2.AsyncClient() as client:
        local = build_chat_model(
            settings(llm_provider="ollama", llm_model="m", llm_timeout_seconds=20.0), client
        )
        remote = build_chat_model(
            settings(llm_provider="anthropic", llm_timeout_seconds=90.0), client
        )
    assert (local.config.timeout, remote.config.timeout) == (20.0, 90.0)


async def test_sampling_and_thinking_defaults_come_from_settings() -> None:
    config = settings(llm_provider="gemini", llm_api_key="k", llm_top_p=0.8, llm_thinking_budget=0)
    async with httpx2.AsyncClient() as client:
        chat = build_chat_model(config, client)
    assert chat.config.defaults == {"top_p": 0.8, "thinking_budget": 0}


async def test_http_client_pool_and_timeouts_come_from_settings() -> None:
    config = settings(
        llm_max_connections=7, llm_timeout_seconds=42.0, llm_connect_timeout_seconds=3.0
    )
    async with build_http_client(config) as client:
        assert client.timeout == httpx2.Timeout(42.0, connect=3.0, pool=42.0)
        # httpx2 exposes no public view of its limits; the pool is what enforces them.
        pool = client._transport._pool  # type: ignore[attr-defined]
        assert (pool._max_connections, pool._max_idle) == (7, 7)


async def test_the_example_env_file_leaves_every_default_to_the_provider() -> None:
    example = Settings(_env_file=Path(__file__).parents[2] / ".env.example")
    async with httpx2.AsyncClient() as client:
        chat = build_chat_model(example, client)
    assert chat.config.defaults == {}
    assert chat.config.timeout == 60.0
    assert not chat.config.configured


async def test_a_preset_is_traced_under_its_own_name() -> None:
    calls: list[tuple[str, str, int]] = []

    class Call:
        def __init__(self, provider: str, model: str) -> None:
            self.provider, self.model = provider, model

        def first_chunk(self) -> None:
            calls.append((self.provider, self.model, 0))

        def end(self, elapsed: float, usage: Usage | None, error: BaseException | None) -> None:
            calls.append((self.provider, self.model, -1))

    class Recorder:
        def on_start(self, provider: str, model: str, attempt: int) -> Call:
            calls.append((provider, model, attempt))
            return Call(provider, model)

    body = sse(delta_chunk({"content": "hi"}, "stop"), usage_chunk(1, 1), "[DONE]")
    transport = httpx2.MockTransport(streamed(200, [body]))
    async with httpx2.AsyncClient(transport=transport) as client:
        chat = build_chat_model(
            settings(llm_provider="deepseek", llm_api_key="k"), client, Recorder()
        )
        _, error = await run(chat, [Msg.text("user", "hi")])
    assert error is None
    assert calls == [
        ("deepseek", "deepseek-chat", 1),
        ("deepseek", "deepseek-chat", 0),
        ("deepseek", "deepseek-chat", -1),
    ]


@pytest.mark.parametrize(
    ("base_url", "hinted"),
    [
        ("http://127.0.0.1:11434", True),
        ("http://127.0.0.1:11434/v1", False),
        ("https://open.bigmodel.cn/api/paas/v4", False),
    ],
)
async def test_a_404_names_the_missing_v1_only_when_the_base_url_has_no_version(
    base_url: str, hinted: bool
) -> None:
    config = settings(llm_base_url=base_url, llm_model="m")
    async with httpx2.AsyncClient() as client:
        model = build_chat_model(config, client)
    assert isinstance(model, OpenAIChatModel)
    error = model.http_error(404, b'{"error": {"message": "not found"}}', None)
    assert error.detail == "HTTP 404: not found"
    assert (f"try LLM_BASE_URL={base_url}/v1" in error.hint) is hinted


def test_urls_are_shown_without_query_string_or_user_info() -> None:
    shown = public_url("https://user:pw@generativelanguage.googleapis.com/v1beta/x:y?key=secret")
    assert shown == "https://generativelanguage.googleapis.com/v1beta/x:y"
    assert public_url("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
