"""`Settings`: every section's fields in one object, checked and read once.

Nothing reads the environment anywhere else: `create_app(settings)` receives this
object, so tests build apps with their own settings side by side. Secrets are
`SecretStr` so they never print in a repr, a log or an error.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Self
from urllib.parse import urlsplit

from dotenv import dotenv_values
from pydantic import field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.config import parsing
from app.config.access import AccessSection, LimitsSection
from app.config.agents import DeepResearchSection, DocumentsSection, PptxSection, SkillsSection
from app.config.deployment import StorageSection, TasksSection, TelemetrySection
from app.config.language_model import LanguageModelSection, ModelsSection
from app.config.outbound import (
    A2aSection,
    FetchSection,
    McpSection,
    OutboundSection,
    WebhookSection,
    WebSearchSection,
)
from app.config.turns import MemorySection, SchedulesSection, TurnsSection


class Settings(
    StorageSection,
    TasksSection,
    LanguageModelSection,
    ModelsSection,
    WebSearchSection,
    McpSection,
    OutboundSection,
    FetchSection,
    WebhookSection,
    A2aSection,
    AccessSection,
    LimitsSection,
    TurnsSection,
    MemorySection,
    SchedulesSection,
    DeepResearchSection,
    DocumentsSection,
    SkillsSection,
    PptxSection,
    TelemetrySection,
    BaseSettings,
):
    """Every setting, one section at a time (the bases, in this order)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_ignore_empty=True)

    @field_validator("data_dir")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @model_validator(mode="after")
    def _redis_topology(self) -> Self:
        """A Redis reached through Sentinels or as a Cluster is refused at start-up when the
        settings cannot describe it, rather than failing at the first turn."""
        sentinels = parsing.sentinel_addresses(self.redis_sentinels)
        if not (sentinels or self.redis_cluster):
            return self
        if not self.redis_url:
            raise ValueError(
                "REDIS_SENTINELS and REDIS_CLUSTER need REDIS_URL too (its password, database"
                " and scheme; with a Cluster, a node to start from)"
            )
        if sentinels and self.redis_cluster:
            raise ValueError("REDIS_SENTINELS and REDIS_CLUSTER exclude each other: set one")
        if sentinels and not self.redis_sentinel_master:
            raise ValueError("REDIS_SENTINELS needs REDIS_SENTINEL_MASTER, the monitored name")
        if self.redis_cluster and re.search(r"[{}]", self.redis_prefix):
            raise ValueError(
                "REDIS_PREFIX must have no { or } with REDIS_CLUSTER: the keys' hash tags follow it"
            )
        if self.redis_cluster and urlsplit(self.redis_url).path.strip("/") not in ("", "0"):
            raise ValueError("a Redis Cluster has database 0 only: REDIS_URL must end /0 or /")
        return self

    def user_by_key(self) -> dict[str, str]:
        """API_KEYS parsed (`parsing.user_by_key`): each key's SHA-256 -> its user."""
        return parsing.user_by_key(self.api_keys.get_secret_value())

    def environment(self) -> dict[str, str]:
        """The variables a model's `apiKeyEnv` may name: the `.env` file's, then the process's.

        The one other place the environment is read, so a key named by a catalog
        entry is found wherever the settings themselves could have been.
        """
        env_file = self.model_config.get("env_file")
        found: dict[str, str] = {}
        if isinstance(env_file, str) and Path(env_file).is_file():
            found.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
        found.update(os.environ)
        return found

    def cors_origin_list(self) -> list[str]:
        """The origins a browser may call from; with API keys, `*` allows no other origin.

        A service with keys names the front ends it trusts: a wildcard would let
        any web page read its answers with a key the page got hold of.
        """
        origins = parsing.listed_origins(self.cors_origins)
        if self.authenticated():
            return [o for o in origins if o != "*"]
        return origins

    def migration_url(self) -> str:
        return self.migrate_database_url or self.database_url

    def migrates_through_pooler(self) -> bool:
        """Whether the start-up would migrate through the transaction pooler, which it refuses:
        a migration may need what a pooler does not keep (a session, a statement outside a
        transaction), and every instance starting would hold a pooled connection for it."""
        return self.db_transaction_pooler and self.auto_migrate and not self.migrate_database_url

    def cors_wildcard_refused(self) -> bool:
        return self.authenticated() and "*" in parsing.listed_origins(self.cors_origins)

    def authenticated(self) -> bool:
        """Whether callers must say who they are (keys, tokens or a sign-in proxy); else
        everyone is the one local user."""
        return bool(self.user_by_key() or self.oidc_issuer or self.auth_trusted_header)
