"""The parts routes use, wired once in the lifespan and handed out through `Annotated` aliases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from pydantic import SecretStr

from app.agents.registry import AgentEntry
from app.config import SettingsPart
from app.documents.library import DocumentLibrary
from app.limits import UserLimits
from app.llm.base import ChatModel
from app.llm.models import ModelCatalog
from app.service.streams import StreamService
from app.service.turns import TurnService
from app.store.base import ConversationTitles, SessionStore, TurnSearch
from app.store.usage import SqlUsage
from app.tasks.base import Tasks
from app.tasks.runs import RunRegistry
from app.tasks.webhooks import Webhooks
from app.tools.mcp import McpHub


class ApiSettings(SettingsPart, renamed={"public_url": "a2a_public_url"}):
    """The settings routes read (main.py fills it, so routes never read `Settings`)."""

    sse_ping_seconds: float
    """Seconds between `: ping` comments on an idle stream."""
    public_url: str
    """Our base URL as clients reach it (the A2A card); empty: the URL a request came to."""
    metrics_key: SecretStr
    """The key /metrics asks for; empty: open, or off when API keys are set."""
    query_max_chars: int
    """The longest `query` (`/agent/limits` tells clients)."""
    upload_max_bytes: int
    """The largest upload (`/agent/limits` tells clients)."""


@dataclass(slots=True)
class Services:
    http: ApiSettings
    agents: dict[str, AgentEntry]
    """Every kind this app was built with (`create_app`'s entries), run here or not."""
    store: SessionStore
    titles: ConversationTitles
    search: TurnSearch
    usage: SqlUsage
    tasks: Tasks
    runs: RunRegistry
    turns: TurnService
    streams: StreamService
    users_by_key: dict[str, str]
    """The SHA-256 (hex) of each API key -> its user; empty: no authentication."""
    files: DocumentLibrary
    model: ChatModel
    """The `default` model (`LLM_*`)."""
    models: ModelCatalog
    """Every configured model by id (`MODELS`)."""
    limits: UserLimits
    webhooks: Webhooks
    mcp: McpHub | None = None
    """The MCP servers' connections, for their state in `/ready`."""


async def get_services(request: Request) -> Services:
    # `async` on purpose: FastAPI runs a plain `def` dependency in a worker thread,
    # a thread hop on every request for what is an attribute read.
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
