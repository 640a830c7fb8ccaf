"""The catalog of named models (`MODELS`), read and checked before the app starts.

`MODELS` is a JSON list, inline or in a file (`@models.json`, `@models.yaml`);
each entry names a provider adapter and where to reach it, so a cheap model,
a strong one, a local one and a vision one can sit side by side. The `LLM_*`
model is the entry `default` unless the list names one itself.

Every mistake is a `ValueError` raised when the app is built, naming the entry
(its id, or its position when it has none) and never a key: an unknown
provider, a key variable that is not set, two entries with one id, a role
(`AGENT_MODELS`, `DEEP_*_MODEL`) naming no entry. So a bad catalog stops the
service at start-up, not at the first turn that picks the entry.

This module only reads and checks; `app/llm/models.py` builds a client per entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import SecretStr, ValidationError

from app.config import Settings
from app.llm.model_entry import DEFAULT_MODEL_ID, ModelEntry, llm_entry
from app.llm.registry import PROVIDERS

Role = Literal["task", "report"]
"""Deep research's roles with a model of their own (`DEEP_TASK_MODEL`, `DEEP_REPORT_MODEL`)."""


@dataclass(frozen=True, slots=True)
class CatalogSpec:
    """The checked catalog: every entry (`default` first), and which one each role takes."""

    entries: tuple[ModelEntry, ...]
    agent_models: Mapping[str, str] = field(default_factory=dict)
    """Agent kind -> the id its turns take when they name none."""
    roles: Mapping[Role, str] = field(default_factory=dict)

    def entry(self, model_id: str) -> ModelEntry | None:
        return next((e for e in self.entries if e.id == model_id), None)

    def ids(self) -> list[str]:
        return [e.id for e in self.entries]


def read_catalog(settings: Settings, environ: Mapping[str, str] | None = None) -> CatalogSpec:
    """`MODELS`, `AGENT_MODELS` and `DEEP_*_MODEL` checked; `ValueError` naming what is wrong.

    `environ` is where `apiKeyEnv` names are looked up (default: `settings.environment()`).
    """
    env = settings.environment() if environ is None else environ
    listed = _entries(_raw_list(settings.models.get_secret_value()), env)
    if not any(e.id == DEFAULT_MODEL_ID for e in listed):
        listed.insert(0, llm_entry(settings))
    else:
        listed.sort(key=lambda e: e.id != DEFAULT_MODEL_ID)
    spec = CatalogSpec(tuple(listed))
    agent_models = _agent_models(settings.agent_models, spec)
    named: tuple[tuple[Role, str, str], ...] = (
        ("task", "DEEP_TASK_MODEL", settings.deep_task_model),
        ("report", "DEEP_REPORT_MODEL", settings.deep_report_model),
    )
    roles = {role: _known(v.strip(), name, spec) for role, name, v in named if v.strip()}
    return CatalogSpec(spec.entries, agent_models, roles)


def _raw_list(text: str) -> list[Any]:
    text = text.strip()
    if not text:
        return []
    if text.startswith("@"):
        path = Path(text[1:]).expanduser()
        if not path.is_file():
            raise ValueError(f"MODELS names the file {path}, which does not exist")
        raw = path.read_text(encoding="utf-8")
        import yaml  # here, not at import: only a catalog in a YAML file needs it

        try:
            data = (
                yaml.safe_load(raw)
                if path.suffix.lower() in (".yaml", ".yml")
                else orjson.loads(raw)
            )
        except (yaml.YAMLError, orjson.JSONDecodeError) as exc:
            raise ValueError(f"MODELS file {path} cannot be read: {type(exc).__name__}") from None
    else:
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            # Only the position: the text may hold a key.
            raise ValueError(
                f"MODELS is not valid JSON (line {exc.lineno}, column {exc.colno})"
            ) from None
    if not isinstance(data, list):
        raise ValueError("MODELS must be a list of models")
    return data


def _entries(raw: list[Any], env: Mapping[str, str]) -> list[ModelEntry]:
    entries: list[ModelEntry] = []
    seen: dict[str, int] = {}
    for number, item in enumerate(raw, 1):
        name = _name(number, item)
        if not isinstance(item, dict):
            raise ValueError(f"MODELS {name} must be an object")
        try:
            entry = ModelEntry.model_validate(item)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}"
                # Never the input: it may be a key.
                for e in exc.errors(include_input=False, include_url=False)
            )
            raise ValueError(f"MODELS {name}: {problems}") from None
        _check_provider(entry, name)
        if entry.id in seen:
            raise ValueError(
                f"MODELS entries {seen[entry.id]} and {number} have the same id {entry.id!r}"
            )
        seen[entry.id] = number
        entry = _with_key(entry, name, env)
        preset = PROVIDERS[entry.provider]
        if not (preset.local or entry.base_url or entry.api_key.get_secret_value()):
            raise ValueError(f"MODELS {name}: needs apiKey, apiKeyEnv or baseUrl")
        entries.append(entry)
    return entries


def _check_provider(entry: ModelEntry, name: str) -> None:
    preset = PROVIDERS.get(entry.provider)
    if preset is None:
        raise ValueError(
            f"MODELS {name}: unknown provider {entry.provider!r}"
            f" (one of {', '.join(sorted(PROVIDERS))})"
        )
    if not (entry.model or preset.default_model):
        raise ValueError(f"MODELS {name}: provider {entry.provider} needs model to name the model")


def _name(number: int, item: Any) -> str:
    """How an error names an entry: its id when it has a usable one, and its position."""
    if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"].strip():
        return f"entry {number} ({item['id'][:64]!r})"
    return f"entry {number}"


def _with_key(entry: ModelEntry, name: str, env: Mapping[str, str]) -> ModelEntry:
    if not entry.api_key_env:
        return entry
    if entry.api_key.get_secret_value():
        raise ValueError(f"MODELS {name}: give apiKey or apiKeyEnv, not both")
    key = env.get(entry.api_key_env, "").strip()
    if not key:
        raise ValueError(f"MODELS {name}: apiKeyEnv {entry.api_key_env} is not set")
    return entry.model_copy(update={"api_key": SecretStr(key)})


def _agent_models(text: str, spec: CatalogSpec) -> dict[str, str]:
    chosen: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        kind, sep, model_id = item.partition(":")
        if not sep or not kind.strip() or not model_id.strip():
            raise ValueError(f"AGENT_MODELS entry {item.strip()!r} must be kind:modelId")
        chosen[kind.strip()] = _known(model_id.strip(), f"AGENT_MODELS ({kind.strip()})", spec)
    return chosen


def _known(model_id: str, setting: str, spec: CatalogSpec) -> str:
    if spec.entry(model_id) is None:
        raise ValueError(
            f"{setting} names the model {model_id!r}, which is not in MODELS"
            f" ({', '.join(spec.ids())})"
        )
    return model_id
