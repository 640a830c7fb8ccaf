"""The MCP client: servers from `MCP_SERVERS`, kept connected, their tools callable.

The model-facing side (tool names, results as the model reads them) is
`app/tools/mcp.py`; this package knows nothing of agents or models.
"""

from app.tools.mcp.config import McpServerConfig, parse_servers
from app.tools.mcp.connection import (
    McpCallFailed,
    McpConnection,
    McpError,
    McpLimits,
    McpUnavailable,
)
from app.tools.mcp.hub import McpHub

__all__ = [
    "McpCallFailed",
    "McpConnection",
    "McpError",
    "McpHub",
    "McpLimits",
    "McpServerConfig",
    "McpUnavailable",
    "parse_servers",
]
