"""`SettingsPart`: the few settings one layer reads, as a small frozen dataclass.

Its fields are read from the same-named settings (after a prefix, or renamed), by one
rule, and have no defaults of their own, so each default is declared once, in the
sections of `Settings`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any, ClassVar, Self, dataclass_transform

from app.config.settings import Settings


@dataclass_transform(frozen_default=True)
class SettingsPart:
    """Base of the frozen dataclass of settings one layer reads, declared without defaults.

    A field is read from the `Settings` field of its name after `prefix`
    (`class McpLimits(SettingsPart, prefix="mcp_")`), or of the name `renamed`
    gives it; a name that is no setting fails at import. The defaults are
    Settings' own (`defaults()`), so no part repeats one.
    """

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    _sources: ClassVar[Mapping[str, str]]
    """Each field -> the setting it is read from."""

    def __init_subclass__(cls, prefix: str = "", renamed: Mapping[str, str] | None = None) -> None:
        super().__init_subclass__()
        names = renamed or {}
        cls._sources = {f: names.get(f, prefix + f) for f in inspect.get_annotations(cls)}
        unknown = sorted(set(cls._sources.values()) - set(Settings.model_fields))
        if unknown:
            raise TypeError(f"{cls.__name__} reads no such setting: {', '.join(unknown)}")
        dataclasses.dataclass(frozen=True)(cls)

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        return cls(**{field: getattr(settings, name) for field, name in cls._sources.items()})

    @classmethod
    def defaults(cls) -> Self:
        """With the defaults `Settings` declares, whatever the environment says: a test or a
        benchmark starts from these and `dataclasses.replace`s what it changes."""
        return cls.from_settings(Settings.model_construct())
