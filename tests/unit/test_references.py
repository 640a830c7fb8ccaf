"""What is generated from the code is checked in as it would be generated now.

`.env.example` (the file a newcomer copies) and the settings, HTTP and event
references of the docs are written by scripts/references.py from `Settings`, the
app's OpenAPI document and app/core/events.py. A setting, an endpoint or an event
added without running it leaves them stale, and these tests say which command fixes it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from app.config import Settings
from app.core.events import Event

ROOT = Path(__file__).resolve().parents[2]
RUN = "run `.venv/bin/python scripts/references.py` and commit what it writes"


def _generator() -> ModuleType:
    name = "scripts_references"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "references.py")
        assert spec is not None
        assert spec.loader is not None
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return _generator()


@pytest.fixture(scope="module")
def openapi(generator: ModuleType) -> dict[str, Any]:
    document: dict[str, Any] = generator.openapi_document()
    return document


def checked_in(path: str) -> str:
    return (ROOT / path).read_text()


def test_every_setting_has_a_description() -> None:
    undescribed = [name for name, field in Settings.model_fields.items() if not field.description]

    assert undescribed == [], f"give each a docstring in its section (app/config/), then {RUN}"


def test_every_setting_is_in_the_example_and_the_reference(generator: ModuleType) -> None:
    names = {name.upper() for name in Settings.model_fields}
    example = set(re.findall(r"^(?:# )?([A-Z][A-Z0-9_]+)=", checked_in(".env.example"), re.M))
    reference = set(re.findall(r"^### `([A-Z0-9_]+)`", checked_in(generator.SETTINGS_PAGE), re.M))

    assert names - example == set(), f".env.example lacks them: {RUN}"
    assert names - reference == set(), f"{generator.SETTINGS_PAGE} lacks them: {RUN}"


def test_every_endpoint_is_in_the_http_reference(
    generator: ModuleType, openapi: dict[str, Any]
) -> None:
    page = checked_in(generator.HTTP_PAGE)
    missing = [
        f"{method} {path}"
        for method, path, _ in generator.operations(openapi)
        if f"### `{method} {path}`" not in page
    ]

    assert missing == [], f"{generator.HTTP_PAGE} lacks them: {RUN}"


def test_every_event_is_in_the_event_reference(generator: ModuleType) -> None:
    page = checked_in(generator.EVENTS_PAGE)
    kinds = [kind.__dataclass_fields__["type"].default for kind in Event.__args__]

    assert [k for k in kinds if f"## `{k}`" not in page] == [], f"{generator.EVENTS_PAGE}: {RUN}"


def test_the_generated_files_are_what_the_code_generates_now(generator: ModuleType) -> None:
    stale = generator.stale(generator.render_all())

    assert stale == [], f"stale: {RUN}"


def test_what_compose_and_the_run_script_read_is_in_the_example() -> None:
    """HOST, PORT and POSTGRES_PASSWORD are no settings of the service, but a copy of the
    example must name them too."""
    compose = checked_in("docker-compose.yml")
    run = checked_in("scripts/run")
    variables = set(re.findall(r"\$\{([A-Z_]+)", compose + run))
    example = set(re.findall(r"^(?:# )?([A-Z][A-Z0-9_]+)=", checked_in(".env.example"), re.M))

    assert variables == {"HOST", "PORT", "POSTGRES_PASSWORD"}
    assert variables - example == set()


def test_the_example_changes_nothing_when_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every value it sets is the default, so `cp .env.example .env` starts the service as
    no `.env` would; a setting whose mere presence counts is shown commented out."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    copied = Settings(_env_file=ROOT / ".env.example")

    assert copied == Settings.model_construct()
    assert copied.model_fields_set.isdisjoint({"llm_timeout_seconds"})
