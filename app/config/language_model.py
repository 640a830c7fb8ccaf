"""Sections of the models the turns call."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from app.config.base import ONLY_WHEN_GIVEN, SettingsSection

Provider = Literal[
    "openai", "anthropic", "gemini", "dashscope", "deepseek", "glm", "qwen", "vllm", "ollama"
]
"""The adapters, then OpenAI-compatible servers preset with their endpoint (app/llm/registry.py)."""


class LanguageModelSection(SettingsSection):
    """Language model

    The model every turn uses unless `MODELS` offers others (docs/operate/models.md).
    Switching vendor is a matter of `LLM_PROVIDER` and its key.
    """

    llm_provider: Provider = "openai"
    """The adapter: `openai` (any OpenAI-compatible endpoint), `anthropic`, `gemini`,
    `dashscope` (the native Qwen API); or a preset of the OpenAI-compatible adapter with its
    endpoint filled in: `deepseek`, `glm`, `qwen` (DashScope's compatible mode), `vllm`,
    `ollama` (these two need no key, but a `LLM_MODEL`). Each one's endpoint and model:
    docs/operate/models.md."""
    llm_base_url: str = ""
    """The provider's endpoint; empty: the provider's default once a key is set (a local
    preset's at once). Any other OpenAI-compatible server: `LLM_PROVIDER=openai` and its URL
    here, with its `/v1`."""
    llm_api_key: SecretStr = SecretStr("")
    """The provider's API key (empty for local servers). Sent only in the vendor's auth
    header, never in a URL, a log line, an event or an error."""
    llm_model: str = ""
    """The model name; empty: the provider's default (`gpt-4o-mini`, `claude-sonnet-4-5`,
    `gemini-2.5-flash`, `qwen-plus`, `deepseek-chat`, `glm-4.6`); `vllm` and `ollama` need
    one."""
    llm_timeout_seconds: float = Field(default=60.0, json_schema_extra=ONLY_WHEN_GIVEN)
    """Longest wait for the first chunk, and between two chunks, of a model stream.

    Only when given (environment, `.env`) does it replace the provider's own default: 60 s,
    or 300 s for local servers (`vllm`, `ollama`), which may load the model first."""
    llm_connect_timeout_seconds: float = 10.0
    """Longest wait for a connection to the provider."""
    llm_max_response_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """Most bytes one model call's streamed answer may take (an answer that never ends, or
    one huge chunk); beyond, the turn ends with an error and the partial answer is kept."""
    llm_max_retries: int = 3
    """Retries of a failed call before its first chunk (a 429 honours `Retry-After`; 5xx,
    overloads and network errors are retried too)."""
    llm_retry_max_delay_seconds: float = 20.0
    """Longest wait between two retries."""
    llm_max_connections: int = 1000
    """Pooled connections to the provider: at least the number of concurrent streams to
    hold."""
    llm_temperature: float | None = None
    """Default sampling temperature, mapped to each provider's name; empty: the provider's."""
    llm_max_tokens: int | None = None
    """Default cap on an answer's tokens, mapped to each provider's name; empty: the
    provider's."""
    llm_top_p: float | None = None
    """Default nucleus sampling, mapped to each provider's name; empty: the provider's."""
    llm_thinking_budget: int | None = Field(default=None, ge=0)
    """Tokens the model may reason with before answering: Anthropic (extended thinking),
    Gemini (thinking budget) and DashScope (`enable_thinking`). 0: no reasoning; empty: the
    provider's default."""
    llm_structured_output: Literal["native", "prompt"] = "native"
    """How the steps that need JSON (deep research's clarify, plan and critique, the deck's
    steps, follow-up questions) ask for it: `native`, the provider's structured output,
    falling back to the prompt for a server that refuses it; `prompt`, the JSON-in-the-prompt
    form only (docs/operate/models.md)."""


class ModelsSection(SettingsSection):
    """Models

    More named models beside the `LLM_*` one, and which agent uses which
    (docs/operate/models.md).
    """

    models: SecretStr = SecretStr("")
    """Named models beside the `LLM_*` one (which is the model `default` unless this names
    one): a JSON list, inline, or `@path/to/models.json|yaml`. Each entry: `id`, `label`,
    `provider`, `baseUrl`, `apiKey` or `apiKeyEnv`, `model`, `contextWindow`, `vision`,
    `inputPricePerMTok`, `outputPricePerMTok`, and optionally `timeoutSeconds`,
    `maxRetries`, `structuredOutput`, `maxConnections`. A mistake (an unknown provider, an
    `apiKeyEnv` not set, a duplicate id) stops the service at start-up, naming the entry.
    Secret: an entry may hold its key inline."""
    agent_models: str = ""
    """Each agent kind's model when a turn names none: `kind:modelId`, comma-separated
    (`deep:strong,pptx:fast`); kinds not named: `default`."""
    deep_task_model: str = ""
    """The model id of deep research's task runs; empty: the turn's model."""
    deep_report_model: str = ""
    """The model id that writes deep research's report; empty: the turn's model."""
