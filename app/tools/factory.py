"""The tools' part of the app: the MCP servers' connections and what the agents offer of
them, the web search and the page reader, open until the lifespan's stack closes.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass

import httpx2

from app.config import Settings
from app.tools.base import Tool
from app.tools.fetch_page import FetchPage
from app.tools.mcp import McpHub, McpLimits, parse_servers
from app.tools.mcp.toolbox import McpToolbox
from app.tools.page_reader import PageReader
from app.tools.search import configured_search


@dataclass(frozen=True, slots=True, kw_only=True)
class Tools:
    mcp: McpHub
    toolbox: McpToolbox
    search: Tool | None
    """The web search every searching agent offers (`WEB_SEARCH_PROVIDER`); None: none set."""
    fetch_page: FetchPage | None
    """None: `FETCH_ENABLED` is off."""


async def build(settings: Settings, *, stack: AsyncExitStack, http: httpx2.AsyncClient) -> Tools:
    """The tools of these settings; `http` is the pooled client they call out on."""
    mcp = await stack.enter_async_context(
        McpHub.open(
            parse_servers(settings.mcp_servers.get_secret_value()),
            McpLimits.from_settings(settings),
        )
    )
    toolbox = McpToolbox(mcp, settings.mcp_result_max_chars, settings.tavily_max_results)
    fetch_page = None
    if settings.fetch_enabled:
        reader = await stack.enter_async_context(PageReader.open(settings))
        fetch_page = FetchPage(reader, settings.fetch_max_chars)
    return Tools(
        mcp=mcp,
        toolbox=toolbox,
        search=configured_search(http, settings, toolbox),
        fetch_page=fetch_page,
    )
