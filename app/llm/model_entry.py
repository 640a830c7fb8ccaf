"""One named model as the catalog (`MODELS`) lists it, and the `LLM_*` model as one.

Its own module so the adapters' registry and the catalog's checks both read it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic.alias_generators import to_camel

from app.config import Settings

DEFAULT_MODEL_ID = "default"
"""The id of the `LLM_*` model, and of every turn that names none."""


class ModelEntry(BaseModel):
    """One named model as `MODELS` lists it (camelCase keys, as on the wire)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
    label: str = ""
    """What a picker shows; default: the id."""
    provider: str
    base_url: str = ""
    """Empty: the provider's own endpoint (a local preset's, or a hosted one's with a key)."""
    api_key: SecretStr = SecretStr("")
    api_key_env: str = ""
    """The environment variable holding the key, so the catalog itself holds none."""
    model: str = ""
    """The provider's model name; empty: the provider preset's default."""
    context_window: int | None = Field(default=None, ge=1)
    vision: bool = False
    input_price_per_m_tok: float | None = Field(default=None, ge=0, alias="inputPricePerMTok")
    output_price_per_m_tok: float | None = Field(default=None, ge=0, alias="outputPricePerMTok")
    timeout_seconds: float | None = Field(default=None, gt=0)
    """Longest wait for each chunk; default: `LLM_TIMEOUT_SECONDS`, or the provider's."""
    max_retries: int | None = Field(default=None, ge=0)
    structured_output: Literal["native", "prompt"] | None = None
    max_connections: int | None = Field(default=None, ge=1)
    """This model's own connection pool; default: `LLM_MAX_CONNECTIONS`."""

    @property
    def shown_label(self) -> str:
        return self.label or self.id

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """What the tokens cost at this model's prices; None when it has none."""
        if self.input_price_per_m_tok is None and self.output_price_per_m_tok is None:
            return None
        cost = (
            prompt_tokens * (self.input_price_per_m_tok or 0.0)
            + completion_tokens * (self.output_price_per_m_tok or 0.0)
        ) / 1_000_000
        return round(cost, 8)


def llm_entry(settings: Settings) -> ModelEntry:
    """The `LLM_*` model as the catalog's `default`."""
    return ModelEntry(
        id=DEFAULT_MODEL_ID,
        label=settings.llm_model or settings.llm_provider,
        provider=settings.llm_provider,
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key,
        model=settings.llm_model,
    )
