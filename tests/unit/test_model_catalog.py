"""`MODELS`, `AGENT_MODELS` and `DEEP_*_MODEL` as read at start-up: what is kept, what stops it.

A mistake is a `ValueError` whose message names the entry (its id, or its
position) and never holds a key, however the key was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from app.config import Settings
from app.core.responses import Usage
from app.llm.catalog import CatalogSpec, read_catalog
from app.llm.model_entry import ModelEntry
from app.llm.models import ModelCatalog, UnknownModel
from app.llm.registry import build_chat_model

KEY = "sk-inline-secret-1234"
ENV = {"FAST_KEY": "sk-env-secret-5678"}


def settings(models: Any = "", **extra: Any) -> Settings:
    text = models if isinstance(models, str) else orjson.dumps(models).decode()
    values: dict[str, Any] = {"llm_api_key": "sk-llm", "llm_model": "gpt-4o-mini", "models": text}
    return Settings(_env_file=None, **(values | extra))


def fast(**extra: Any) -> dict[str, Any]:
    return {"id": "fast", "provider": "openai", "model": "gpt-4o-mini", "apiKeyEnv": "FAST_KEY"} | (
        extra
    )


def local(**extra: Any) -> dict[str, Any]:
    return {"id": "local", "provider": "ollama", "model": "qwen3:8b"} | extra


def refused(models: Any, **extra: Any) -> str:
    with pytest.raises(ValueError, match=r"MODELS|_MODEL") as caught:
        read_catalog(settings(models, **extra), ENV)
    message = str(caught.value)
    assert KEY not in message
    assert ENV["FAST_KEY"] not in message
    return message


def test_without_models_the_llm_settings_are_the_one_model_default() -> None:
    spec = read_catalog(settings(), ENV)

    [entry] = spec.entries
    assert (entry.id, entry.provider, entry.model) == ("default", "openai", "gpt-4o-mini")
    assert entry.api_key.get_secret_value() == "sk-llm"
    assert spec.agent_models == {}
    assert spec.roles == {}


def test_entries_come_after_default_with_their_keys_read_from_the_environment() -> None:
    spec = read_catalog(settings([fast(), local(label="On this machine")]), ENV)

    assert spec.ids() == ["default", "fast", "local"]
    fast_entry = spec.entry("fast")
    assert fast_entry is not None
    assert fast_entry.api_key.get_secret_value() == ENV["FAST_KEY"]
    assert "sk-env" not in repr(fast_entry)
    local_entry = spec.entry("local")
    assert local_entry is not None
    assert local_entry.shown_label == "On this machine"


def test_a_default_in_models_replaces_the_llm_one_and_goes_first() -> None:
    own_default = {"id": "default", "provider": "anthropic", "apiKey": KEY, "label": "Claude"}
    spec = read_catalog(settings([fast(), own_default]), ENV)

    assert spec.ids() == ["default", "fast"]
    assert spec.entries[0].provider == "anthropic"


def test_a_catalog_file_may_be_yaml_or_json(tmp_path: Path) -> None:
    yaml_file = tmp_path / "models.yaml"
    yaml_file.write_text(
        "- id: local\n  provider: ollama\n  model: llama3.2\n  vision: true\n"
        "- id: fast\n  provider: openai\n  apiKeyEnv: FAST_KEY\n"
        "  inputPricePerMTok: 0.15\n  outputPricePerMTok: 0.6\n"
    )
    json_file = tmp_path / "models.json"
    json_file.write_bytes(orjson.dumps([local()]))

    from_yaml = read_catalog(settings(f"@{yaml_file}"), ENV)
    from_json = read_catalog(settings(f"@{json_file}"), ENV)

    assert from_yaml.ids() == ["default", "local", "fast"]
    entry = from_yaml.entry("fast")
    assert entry is not None
    assert entry.input_price_per_m_tok == 0.15
    assert from_json.ids() == ["default", "local"]


@pytest.mark.parametrize(
    ("models", "expected"),
    [
        (
            [fast(), {"id": "x", "provider": "openia", "apiKey": KEY}],
            "MODELS entry 2 ('x'): unknown provider 'openia' (one of anthropic, dashscope,",
        ),
        ([fast(apiKeyEnv="NOT_SET_ANYWHERE")], "entry 1 ('fast'): apiKeyEnv NOT_SET_ANYWHERE"),
        ([fast(), local(id="fast")], "MODELS entries 1 and 2 have the same id 'fast'"),
        ([fast(apiKey=KEY)], "entry 1 ('fast'): give apiKey or apiKeyEnv, not both"),
        (
            [{"id": "h", "provider": "anthropic"}],
            "entry 1 ('h'): needs apiKey, apiKeyEnv or baseUrl",
        ),
        ([{"id": "v", "provider": "vllm"}], "entry 1 ('v'): provider vllm needs model"),
        ([local(apikey=KEY)], "entry 1 ('local'): apikey: Extra inputs are not permitted"),
        ([local(inputPricePerMTok=-1)], "entry 1 ('local'): inputPricePerMTok: Input should be"),
        ([{"provider": "ollama", "model": "m"}], "MODELS entry 1: id: Field required"),
        ([local(id="has space")], "id: String should match pattern"),
        ([KEY], "MODELS entry 1 must be an object"),
        ({"id": "fast"}, "MODELS must be a list of models"),
        (f'[{{"id": "x", "apiKey": "{KEY}",', "MODELS is not valid JSON (line 1,"),
        ("@/no/such/models.yaml", "MODELS names the file /no/such/models.yaml"),
    ],
)
def test_a_bad_entry_is_named_and_its_key_is_not_shown(models: Any, expected: str) -> None:
    assert expected in refused(models)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"agent_models": "deep:strong"}, "AGENT_MODELS (deep) names the model 'strong'"),
        ({"agent_models": "deep"}, "AGENT_MODELS entry 'deep' must be kind:modelId"),
        ({"deep_task_model": "big"}, "DEEP_TASK_MODEL names the model 'big'"),
        ({"deep_report_model": "big"}, "DEEP_REPORT_MODEL names the model 'big', which is not"),
    ],
)
def test_a_role_naming_no_model_is_refused(extra: dict[str, Any], expected: str) -> None:
    assert expected in refused([fast()], **extra)


def test_roles_and_agent_defaults_choose_the_turns_model() -> None:
    spec = read_catalog(
        settings([fast(), local()], agent_models="deep:local, pptx:fast", deep_report_model="fast"),
        ENV,
    )
    catalog = ModelCatalog(spec, {})

    assert spec.agent_models == {"deep": "local", "pptx": "fast"}
    assert catalog.choose("chat", None) == "default"
    assert catalog.choose("deep", None) == "local"
    assert catalog.role("report", "local") == "fast"
    assert catalog.role("task", "local") == "local"


def test_an_unknown_model_says_which_ones_there_are() -> None:
    catalog = ModelCatalog(read_catalog(settings([fast()]), ENV), {})

    with pytest.raises(
        UnknownModel, match="Unknown model 'nope'; this service offers: default, fast"
    ):
        catalog.choose("chat", "nope")


def test_cost_is_priced_per_million_tokens_and_absent_without_prices() -> None:
    priced = ModelEntry(
        id="p", provider="openai", input_price_per_m_tok=3.0, output_price_per_m_tok=15.0
    )
    free = ModelEntry(id="f", provider="ollama")
    spec = CatalogSpec((priced, free))
    catalog = ModelCatalog(spec, {})

    assert catalog.cost_usd("p", Usage(2_000_000, 100_000)) == pytest.approx(7.5)
    assert catalog.cost_usd("f", Usage(2_000_000, 100_000)) is None


def test_each_entry_gets_its_own_timeout_retries_structured_output_and_token_counter() -> None:
    base = settings([], llm_timeout_seconds=30, llm_max_retries=3)
    entry = ModelEntry(
        id="slow",
        provider="ollama",
        model="llama3.2",
        timeout_seconds=600,
        max_retries=0,
        structured_output="prompt",
    )
    model = build_chat_model(base, client=None, entry=entry)  # type: ignore[arg-type]
    plain = build_chat_model(base, client=None)  # type: ignore[arg-type]

    assert (model.config.timeout, model.config.retry.max_retries) == (600, 0)
    assert model.config.structured_output == "prompt"
    assert model.config.base_url == "http://localhost:11434/v1"
    assert model.config.name == "slow"
    assert (plain.config.timeout, plain.config.retry.max_retries) == (30, 3)
    assert plain.config.structured_output == "json_schema"
    assert plain.config.name == "default"
    assert model.tokens is not plain.tokens
