"""The parts routes use, wired once in the lifespan and handed out through `Annotated` aliases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from pydantic import SecretStr

from app.agents.registry import AgentEntry
from app.auth import Authenticator
from app.config import SettingsPart
from app.core.drain import Drain
from app.documents.library import DocumentLibrary
from app.limits.adjusted import AdjustedLimits
from app.llm.base import ChatModel
from app.llm.models import ModelCatalog
from app.service.memory import MemoryService
from app.service.projects import ProjectService
from app.service.run_listing import RunListing
from app.service.schedules import ScheduleService
from app.service.streams import StreamService
from app.service.turns import TurnService

if TYPE_CHECKING:
    from app.store.auth_keys import SqlAuthKeys
    from app.store.base import ConversationTitles, TurnSearch, TurnStore
    from app.store.preferences import SqlPreferences
    from app.store.push_configs import SqlPushConfigs
    from app.store.ratings import SqlRatings
    from app.store.shares import SqlShares
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
    """The key /metrics asks for; empty: open, or off when callers sign in."""
    oidc_client_id: str
    """The chat page's public client at the OIDC issuer; empty: the page does not sign in."""
    oidc_scopes: str
    query_max_chars: int
    """The longest `query` (`/agent/limits` tells clients)."""
    upload_max_bytes: int
    """The largest upload (`/agent/limits` tells clients)."""


@dataclass(slots=True)
class Services:
    http: ApiSettings
    agents: dict[str, AgentEntry]
    """Every kind this app was built with (`create_app`'s entries), run here or not."""
    store: TurnStore
    titles: ConversationTitles
    search: TurnSearch
    usage: SqlUsage
    ratings: SqlRatings
    shares: SqlShares
    """Conversations shared by link."""
    """Users' verdicts on answers."""
    preferences: SqlPreferences
    """What each user chose for every device (`/account/preferences`)."""
    tasks: Tasks
    runs: RunRegistry
    turns: TurnService
    listing: RunListing
    """The runs going and paused (`/agent/runs`, the admins' list)."""
    streams: StreamService
    projects: ProjectService
    memory: MemoryService
    """The caller's memory items and switch (404 throughout with `MEMORY_ENABLED=false`)."""
    schedules: ScheduleService
    auth: Authenticator
    """Who a request is (app/api/auth.py); `auth.enabled` False: everyone is one local user."""
    auth_keys: SqlAuthKeys
    """The keys users make (`/auth/keys`)."""
    files: DocumentLibrary
    model: ChatModel
    """The `default` model (`LLM_*`)."""
    models: ModelCatalog
    """Every configured model by id (`MODELS`)."""
    limits: AdjustedLimits
    webhooks: Webhooks
    push_configs: SqlPushConfigs
    """A2A tasks' push notification configs."""
    mcp: McpHub | None = None
    """The MCP servers' connections, for their state in `/ready`."""
    drain: Drain = field(default_factory=Drain)
    """Whether this instance drains (SIGTERM): `/ready` answers 503 from then on."""


async def get_services(request: Request) -> Services:
    # `async` on purpose: FastAPI runs a plain `def` dependency in a worker thread,
    # a thread hop on every request for what is an attribute read.
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def public_base_url(request: Request, services: Services) -> str:
    """Our base URL as clients reach it: `A2A_PUBLIC_URL`, else the URL this request came to.

    What makes relative URLs (a file's `/file/download/…`) absolute in A2A and MCP answers.
    """
    return services.http.public_url.rstrip("/") or str(request.base_url).rstrip("/")
