"""The small settings objects the layers take are read from `Settings`, by the names it has.

A part's field is `setting("name")` (app/config.py): typed `Any`, so nothing
but this test sees a part's type drift from its setting's.
"""

from __future__ import annotations

import dataclasses
import sys
import typing

import pytest

import app.main  # noqa: F401  (builds every layer, so every part is defined)
from app.agents.turn import AgentSettings
from app.config import Settings, SettingsPart
from app.documents.library import LibrarySettings
from app.tools.shell import ShellLimits

PARTS = [
    part
    for part in SettingsPart.__subclasses__()
    # `slots=True` makes a new class; the one it replaced lingers among the subclasses.
    if getattr(sys.modules[part.__module__], part.__name__) is part
]


def sources(part: type[SettingsPart]) -> dict[str, str]:
    return {
        field.name: field.metadata["setting"]
        for field in dataclasses.fields(part)
        if "setting" in field.metadata
    }


@pytest.mark.parametrize("part", PARTS, ids=lambda part: part.__name__)
def test_a_part_field_has_its_settings_type(part: type[SettingsPart]) -> None:
    hints = typing.get_type_hints(part)

    assert sources(part)
    for name, source in sources(part).items():
        assert hints[name] == Settings.model_fields[source].annotation, name


def test_an_operator_setting_reaches_the_layer_that_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REACT_MAX_ROUNDS", "9")
    monkeypatch.setenv("FILE_PARSE_MEMORY_MB", "512")
    monkeypatch.setenv("SKILLS_MAX_FILE_BYTES", "4096")
    settings = Settings(_env_file=None)

    assert AgentSettings.from_settings(settings).max_rounds == 9
    assert LibrarySettings.from_settings(settings).parsing.memory_bytes == 512 * 1024 * 1024
    limits = ShellLimits.from_settings(settings)
    assert (limits.file_bytes, limits.open_files) == (4096, ShellLimits().open_files)


def test_a_part_built_directly_has_the_settings_defaults_not_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests and benchmarks build parts directly; what the machine's environment says
    must not change them."""
    monkeypatch.setenv("REACT_MAX_ROUNDS", "9")

    assert AgentSettings(recommendations=False).max_rounds == Settings.model_fields[
        "react_max_rounds"
    ].get_default(call_default_factory=True)
