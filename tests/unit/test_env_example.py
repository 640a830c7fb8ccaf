"""`.env.example` is the settings reference a newcomer copies: every setting is there,
each with a comment, and so is every variable `docker-compose.yml` and `scripts/run` read."""

from __future__ import annotations

import re
from pathlib import Path

from app.config import Settings

ROOT = Path(__file__).resolve().parents[2]
SETTING = re.compile(r"^#?\s?([A-Z][A-Z0-9_]+)=")


def example_lines() -> list[str]:
    return (ROOT / ".env.example").read_text().splitlines()


def listed() -> set[str]:
    """Names set in the example, or shown commented out (`# LLM_TIMEOUT_SECONDS=60`)."""
    return {m[1] for line in example_lines() if (m := SETTING.match(line))}


def test_every_setting_is_in_the_example() -> None:
    names = {name.upper() for name in Settings.model_fields}

    assert names - listed() == set()


def test_every_setting_in_the_example_has_a_comment() -> None:
    """A setting's own comment is just above it, or it shares a family's (`LLM_TOP_P` after
    `LLM_MAX_TOKENS`, under one comment for the sampling options)."""
    uncommented = []
    previous = ""
    for line in example_lines():
        match = SETTING.match(line)
        if match and not line.startswith("#"):
            family = match[1].split("_")[0] + "_"
            if not (previous.startswith("#") or previous.startswith(family)):
                uncommented.append(match[1])
        previous = line.removeprefix("# ") if SETTING.match(line) else line

    assert uncommented == []


def test_what_compose_and_the_run_script_read_is_in_the_example() -> None:
    compose = (ROOT / "docker-compose.yml").read_text()
    run = (ROOT / "scripts" / "run").read_text()
    variables = set(re.findall(r"\$\{([A-Z_]+)", compose + run))

    assert variables == {"HOST", "PORT", "POSTGRES_PASSWORD"}
    assert variables - listed() == set()
