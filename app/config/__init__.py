"""Settings, read once from the environment and `.env` when the app is built.

`Settings` (`settings`) is composed of one class per section (storage, the
language model, limits, ...), kept by area: `deployment`, `language_model`,
`outbound`, `access`, `turns`, `agents`. Each field's docstring is the
setting's one description, from which `scripts/references.py` writes the
settings reference and `.env.example`. `parsing` reads the settings that hold
lists in one string (API keys, CORS origins, Sentinels).

A layer takes the few settings it reads as a small frozen dataclass, a
`SettingsPart` (`part`): its fields are read from the same-named settings
(after a prefix, or renamed), by one rule, and have no defaults of their own,
so each default is declared once, in its section.
"""

from app.config.agents import ShellMode
from app.config.base import ONLY_WHEN_GIVEN, SettingsSection
from app.config.language_model import Provider
from app.config.parsing import key_digest, sentinel_addresses
from app.config.part import SettingsPart
from app.config.settings import Settings
from app.config.turns import DisconnectPolicy

__all__ = [
    "ONLY_WHEN_GIVEN",
    "DisconnectPolicy",
    "Provider",
    "Settings",
    "SettingsPart",
    "SettingsSection",
    "ShellMode",
    "key_digest",
    "sentinel_addresses",
]
