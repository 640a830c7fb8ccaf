"""The agents' part of the app: what every agent shares (`AgentCore`), and the agents
themselves, each built at its first turn (`OnDemandAgents`); and `Parts`, the parts below
them, which the service's part is built on too."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass

from app.agents.approvals import ApprovalPolicy, ApprovalSettings
from app.agents.on_demand import OnDemandAgents
from app.agents.registry import AgentEntry
from app.agents.turn import AgentCore, AgentSettings
from app.config import Settings
from app.core.observe import AgentObserver
from app.documents.factory import Documents
from app.limits.adjusted import AdjustedLimits
from app.llm.factory import Models
from app.store.factory import Stores
from app.tasks.factory import Runs
from app.tools.factory import Tools


@dataclass(frozen=True, slots=True, kw_only=True)
class Parts:
    """The parts the agents and the service stand on, each built by its own package."""

    stores: Stores
    models: Models
    tools: Tools
    runs: Runs
    documents: Documents
    limits: AdjustedLimits


async def build(
    settings: Settings,
    *,
    stack: AsyncExitStack,
    entries: Sequence[AgentEntry],
    parts: Parts,
    observer: AgentObserver,
) -> OnDemandAgents:
    """The agents of `entries` that run with these settings.

    What they hold open closes with a stack of their own, entered on `stack` now,
    so, entered before the runs' shutdown is registered, it closes after every run
    ended, though each agent is built at its first turn.
    """
    stores, models, tools, documents = parts.stores, parts.models, parts.tools, parts.documents
    core = AgentCore(
        model=models.catalog.default,
        store=stores.sessions,
        tokens=models.tokens,
        http=models.http,
        limits=AgentSettings.from_settings(settings),
        documents=documents.library,
        database=stores.database,
        mcp=tools.toolbox,
        search=tools.search,
        fetch_page=tools.fetch_page,
        observer=observer,
        unstored=parts.runs.unstored,
        models=models.catalog,
        approvals=ApprovalPolicy.from_settings(ApprovalSettings.from_settings(settings)),
        user_memory=documents.user_memory,
    )
    own = await stack.enter_async_context(AsyncExitStack())
    return OnDemandAgents(entries, core, settings=settings, stack=own)
