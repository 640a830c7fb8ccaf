"""Which web search the agents get: Tavily's API, an MCP server's search tool, or none.

Chosen once in the lifespan from the settings and shared by every agent that searches.
"""

from __future__ import annotations

import httpx2

from app.config import Settings
from app.tools.base import Tool
from app.tools.mcp.toolbox import McpToolbox
from app.tools.web_search import TavilySearch


def configured_search(
    client: httpx2.AsyncClient, settings: Settings, mcp: McpToolbox | None = None
) -> Tool | None:
    """The web search of these settings: Tavily's HTTP API (None without a key: agents
    then do without), or with `WEB_SEARCH_PROVIDER=mcp:<server>` an MCP server's search."""
    if settings.web_search_provider != "tavily":
        return mcp.web_search(settings.web_search_provider) if mcp is not None else None
    key = settings.tavily_api_key
    if not key.get_secret_value():
        return None
    return TavilySearch(client, settings.tavily_base_url, key, settings.tavily_max_results)
