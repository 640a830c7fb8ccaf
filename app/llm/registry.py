"""Which `ChatModel` class serves a provider, and a model's `ModelConfig` from the settings.

Adding a provider is one module and one line in `PROVIDERS`. The
OpenAI-compatible servers the seeds name (DeepSeek, GLM, Qwen's compatible
mode, vLLM, Ollama) are lines too: the one OpenAI adapter with their
endpoint, default model and timeout, so `LLM_PROVIDER=deepseek` and a key is
a whole configuration. `LLM_BASE_URL` and `LLM_MODEL` override any of them.

Each line also says how the server takes a JSON step (`structured_output`):
held to the step's schema, or (DeepSeek, GLM, Qwen's compatible mode,
DashScope) only to "a JSON object", the shape then said in the prompt.
`LLM_STRUCTURED_OUTPUT=prompt` asks every step in the prompt alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx2

from app.config import Settings
from app.core.tools import GenerateOptions
from app.llm.anthropic import AnthropicChatModel
from app.llm.base import ChatModel, ModelConfig, ModelObserver, RetryPolicy, StructuredOutput
from app.llm.dashscope import DashScopeChatModel
from app.llm.gemini import GeminiChatModel
from app.llm.model_entry import ModelEntry, llm_entry
from app.llm.openai import OpenAIChatModel
from app.llm.tokens import TokenCounter, encoding_for

LOCAL_TIMEOUT_SECONDS = 300.0
"""A local server may first load the model into memory: minutes, not seconds."""


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    model_class: type[ChatModel]
    default_base_url: str
    """Used when a key is set (or the server is local): otherwise an empty
    base URL means "not configured", and nothing is called."""
    default_model: str
    """Empty: `LLM_MODEL` must name it (a local server serves what it loaded)."""
    local: bool = False
    """Runs beside the service, with no key: its default URL is used as is."""
    timeout: float = 60.0
    """Seconds to wait for each chunk, unless `LLM_TIMEOUT_SECONDS` is given."""
    structured_output: StructuredOutput = "json_schema"
    """The native structured output the server offers (see the module docstring)."""


PROVIDERS: dict[str, ProviderSpec] = {
    "openai": ProviderSpec(OpenAIChatModel, "https://api.openai.com/v1", "gpt-4o-mini"),
    "anthropic": ProviderSpec(
        AnthropicChatModel, "https://api.anthropic.com/v1", "claude-sonnet-4-5"
    ),
    "gemini": ProviderSpec(
        GeminiChatModel, "https://generativelanguage.googleapis.com/v1beta", "gemini-2.5-flash"
    ),
    "dashscope": ProviderSpec(
        DashScopeChatModel,
        "https://dashscope.aliyuncs.com/api/v1",
        "qwen-plus",
        structured_output="json_object",
    ),
    "deepseek": ProviderSpec(
        OpenAIChatModel,
        "https://api.deepseek.com/v1",
        "deepseek-chat",
        structured_output="json_object",
    ),
    "glm": ProviderSpec(
        OpenAIChatModel,
        "https://open.bigmodel.cn/api/paas/v4",
        "glm-4.6",
        structured_output="json_object",
    ),
    "qwen": ProviderSpec(
        OpenAIChatModel,
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "qwen-plus",
        structured_output="json_object",
    ),
    "vllm": ProviderSpec(
        OpenAIChatModel, "http://localhost:8000/v1", "", local=True, timeout=LOCAL_TIMEOUT_SECONDS
    ),
    "ollama": ProviderSpec(
        OpenAIChatModel, "http://localhost:11434/v1", "", local=True, timeout=LOCAL_TIMEOUT_SECONDS
    ),
}


def build_chat_model(
    settings: Settings,
    client: httpx2.AsyncClient,
    observer: ModelObserver | None = None,
    tokens: TokenCounter | None = None,
    entry: ModelEntry | None = None,
) -> ChatModel:
    """`entry`'s model (default: the `LLM_*` one); `ValueError` for one that cannot work.

    The `LLM_*` settings fill in what the entry leaves out (retries, timeouts, sampling).
    """
    entry = entry or llm_entry(settings)
    spec = PROVIDERS[entry.provider]
    config = model_config(settings, spec, entry)
    if config.configured and not config.model:
        raise ValueError(f"LLM_PROVIDER={entry.provider} needs LLM_MODEL to name the model")
    return spec.model_class(
        config, client, observer, tokens or TokenCounter(encoding_for(config.model))
    )


def model_config(
    settings: Settings, spec: ProviderSpec, entry: ModelEntry | None = None
) -> ModelConfig:
    entry = entry or llm_entry(settings)
    base_url = entry.base_url.rstrip("/")
    if not base_url and (spec.local or entry.api_key.get_secret_value()):
        base_url = spec.default_base_url
    defaults = GenerateOptions()
    if settings.llm_temperature is not None:
        defaults["temperature"] = settings.llm_temperature
    if settings.llm_max_tokens is not None:
        defaults["max_tokens"] = settings.llm_max_tokens
    if settings.llm_top_p is not None:
        defaults["top_p"] = settings.llm_top_p
    if settings.llm_thinking_budget is not None:
        defaults["thinking_budget"] = settings.llm_thinking_budget
    given = "llm_timeout_seconds" in settings.model_fields_set
    timeout = settings.llm_timeout_seconds if given else spec.timeout
    structured = entry.structured_output or settings.llm_structured_output
    return ModelConfig(
        provider=entry.provider,
        base_url=base_url,
        api_key=entry.api_key,
        model=entry.model or spec.default_model,
        retry=RetryPolicy(
            max_retries=(
                settings.llm_max_retries if entry.max_retries is None else entry.max_retries
            ),
            max_delay=settings.llm_retry_max_delay_seconds,
        ),
        defaults=defaults,
        timeout=entry.timeout_seconds or timeout,
        max_response_bytes=settings.llm_max_response_bytes,
        structured_output="prompt" if structured == "prompt" else spec.structured_output,
        name=entry.id,
    )
