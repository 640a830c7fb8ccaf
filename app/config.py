"""Settings, read once from the environment and `.env` when the app is built.

Nothing reads the environment anywhere else: `create_app(settings)` receives
this object, so tests build apps with their own settings side by side.
Secrets are `SecretStr` so they never print in a repr, a log or an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

Provider = Literal[
    "openai", "anthropic", "gemini", "dashscope", "deepseek", "glm", "qwen", "vllm", "ollama"
]
"""The adapters, then OpenAI-compatible servers preset with their endpoint (app/llm/registry.py)."""
DisconnectPolicy = Literal["continue", "cancel"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_ignore_empty=True)

    database_url: str = "sqlite+aiosqlite:///./data/app.db"
    auto_migrate: bool = True
    """Apply Alembic migrations at start-up; turn off where deployments migrate separately."""
    db_pool_size: int = 20

    redis_url: str = ""
    """Empty: the in-process task registry (one instance only)."""
    redis_prefix: str = "dodo:"
    """Prefix of every Redis key and channel, so several deployments can share one Redis."""

    llm_provider: Provider = "openai"
    llm_base_url: str = ""
    llm_api_key: SecretStr = SecretStr("")
    llm_model: str = ""
    llm_timeout_seconds: float = 60.0
    """Longest wait for the first chunk, and between two chunks, of a model stream.

    Only when given (environment, `.env`) does it replace the provider's own
    default: 60 s, or 300 s for local servers, which may load the model first."""
    llm_connect_timeout_seconds: float = 10.0
    llm_max_retries: int = 3
    llm_retry_max_delay_seconds: float = 20.0
    llm_max_connections: int = 1000
    """Pooled connections to the provider: at least the number of concurrent streams to hold."""
    llm_temperature: float | None = None
    llm_max_tokens: int | None = None
    llm_top_p: float | None = None
    llm_thinking_budget: int | None = Field(default=None, ge=0)
    """Tokens the model may reason with (Anthropic, Gemini, DashScope); 0: none; empty: default."""

    tavily_api_key: SecretStr = SecretStr("")
    tavily_base_url: str = "https://api.tavily.com"
    tavily_max_results: int = 5

    api_keys: SecretStr = SecretStr("")
    """`key1:alice,key2:bob`; empty means no authentication and one local user."""
    cors_origins: str = "*"
    """Comma-separated origins a browser may call the API from; `*` (any) only without API_KEYS."""

    data_dir: Path = Path("./data")
    task_ttl_seconds: int = Field(default=1800, ge=1)
    query_max_chars: int = Field(default=32000, ge=1)
    upload_max_bytes: int = Field(default=50 * 1024 * 1024, ge=1)

    sse_ping_seconds: float = Field(default=15.0, gt=0)
    on_disconnect: DisconnectPolicy = "continue"
    resume_retention_seconds: int = 300
    """How long a finished run's events stay readable by `/agent/resume`."""
    resume_max_events: int = Field(default=10000, ge=1)
    """Events of one run kept in its Redis Stream for other instances (older ones are trimmed)."""
    partial_save_seconds: float = Field(default=5.0, gt=0)
    """How often a running turn's answer so far is stored, so a crash loses at most this much."""
    store_retry_seconds: float = Field(default=0.5, gt=0)
    """First wait before retrying a failed final store of a turn; it doubles, 5 attempts in all."""

    memory_max_turns: int = 10
    memory_max_tokens: int = 6000
    react_max_rounds: int = 5
    recommendations_enabled: bool = True
    tool_result_display_chars: int = 2000

    deep_max_parallel: int = Field(default=3, ge=1)
    """Deep research: tasks of a plan that run at the same time."""
    deep_max_rounds: int = Field(default=3, ge=1)
    """Deep research: plan -> tasks -> critique rounds before the report is written anyway."""
    deep_task_max_rounds: int = Field(default=5, ge=1)
    """Deep research: search-and-reason rounds of one task before it must answer."""

    embedding_base_url: str = ""
    """An OpenAI-compatible `/embeddings` endpoint; empty: documents are searched by BM25 alone."""
    embedding_api_key: SecretStr = SecretStr("")
    embedding_model: str = "text-embedding-3-small"
    embedding_batch_size: int = Field(default=64, ge=1)
    file_chunk_chars: int = Field(default=1000, ge=100)
    """Length of the passages a document is cut into for search."""
    file_chunk_overlap_chars: int = Field(default=200, ge=0)
    file_whole_text_chars: int = Field(default=8000, ge=0)
    """A document whose text is at most this long is handed to the model whole."""
    file_search_top_k: int = Field(default=5, ge=1)

    log_level: str = "INFO"

    @field_validator("data_dir")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    def user_by_key(self) -> dict[str, str]:
        """Parse API_KEYS into key -> user; an empty mapping means auth is off."""
        pairs: dict[str, str] = {}
        for item in self.api_keys.get_secret_value().split(","):
            key, sep, user = item.strip().partition(":")
            if key and sep and user:
                pairs[key.strip()] = user.strip()
        return pairs

    def cors_origin_list(self) -> list[str]:
        """The origins a browser may call from; with API keys, `*` allows no other origin.

        A service with keys names the front ends it trusts: a wildcard would let
        any web page read its answers with a key the page got hold of.
        """
        origins = self._listed_origins()
        if self.user_by_key():
            return [o for o in origins if o != "*"]
        return origins

    def cors_wildcard_refused(self) -> bool:
        return bool(self.user_by_key()) and "*" in self._listed_origins()

    def _listed_origins(self) -> list[str]:
        return [o.strip() for o in self.cors_origins.split(",") if o.strip()]
