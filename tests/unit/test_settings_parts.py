"""The small settings objects the layers take are read from `Settings`, by one rule.

A part writes no default of its own (app/config/part.py, `SettingsPart`): its
fields are read from the settings of their names, after a prefix or renamed,
by `getattr`; so nothing but this test sees a part's type drift from its setting's.
"""

from __future__ import annotations

import typing

import pytest

import app.factory  # noqa: F401  (imports every layer, so every part is defined)
from app.agents.turn import AgentSettings
from app.config import Settings, SettingsPart
from app.documents.library import LibrarySettings
from app.tools.shell import ShellLimits

PARTS = SettingsPart.__subclasses__()


@pytest.mark.parametrize("part", PARTS, ids=lambda part: part.__name__)
def test_a_part_field_has_its_settings_type(part: type[SettingsPart]) -> None:
    hints = typing.get_type_hints(part)
    sources = part._sources

    assert set(sources) == set(hints) - {"_sources", "__dataclass_fields__"}
    for field, setting in sources.items():
        assert hints[field] == Settings.model_fields[setting].annotation, field


def test_an_operator_setting_reaches_the_layer_that_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REACT_MAX_ROUNDS", "9")
    monkeypatch.setenv("FILE_SEARCH_TOP_K", "7")
    monkeypatch.setenv("FILE_PARSE_MEMORY_MB", "512")
    monkeypatch.setenv("SKILLS_MAX_FILE_BYTES", "4096")
    settings = Settings(_env_file=None)

    assert AgentSettings.from_settings(settings).max_rounds == 9
    library = LibrarySettings.from_settings(settings)
    assert (library.top_k, library.parsing.memory_bytes) == (7, 512 * 1024 * 1024)
    assert ShellLimits.from_settings(settings).file_bytes == 4096


def test_a_misnamed_part_field_fails_when_it_is_declared() -> None:
    with pytest.raises(TypeError, match="react_max_round"):

        class Misnamed(SettingsPart, prefix="react_"):
            max_round: int


def test_a_part_built_for_a_test_has_the_declared_defaults_not_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests and benchmarks start from `defaults()`: what this machine's environment
    says must not change them."""
    monkeypatch.setenv("REACT_MAX_ROUNDS", "9")

    assert AgentSettings.defaults().max_rounds == Settings.model_fields[
        "react_max_rounds"
    ].get_default(call_default_factory=True)
