"""What every section of the settings is: a pydantic model described by its docstrings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, JsonValue

ONLY_WHEN_GIVEN: dict[str, JsonValue] = {"onlyWhenGiven": True}
"""Marks a setting (`json_schema_extra`) whose being given at all changes what the service
does, since unset it falls back to something other than its declared default:
`.env.example` shows it commented out, so copying the file changes nothing."""


class SettingsSection(BaseModel):
    """A group of settings: its docstring's first line is the group's title, the rest its
    introduction; each field's docstring is the setting's one description. The settings
    reference (docs/operate/settings.md) and `.env.example` are generated from them by
    `scripts/references.py`."""

    model_config = ConfigDict(use_attribute_docstrings=True)
