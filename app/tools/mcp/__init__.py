"""The MCP client: servers from `MCP_SERVERS`, kept connected, their tools callable.

The model-facing side (tool names, results as the model reads them) is
`app/tools/mcp.py`; this package knows nothing of agents or models. The client library is
imported only when a server is configured (`connection`).
"""

from app.tools.mcp.config import McpLimits, McpServerConfig, parse_servers
from app.tools.mcp.errors import McpCallFailed, McpError, McpUnavailable
from app.tools.mcp.hub import McpHub

__all__ = [
    "McpCallFailed",
    "McpError",
    "McpHub",
    "McpLimits",
    "McpServerConfig",
    "McpUnavailable",
    "parse_servers",
]
