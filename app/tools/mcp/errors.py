"""What a failed MCP call raises; apart from the client, so naming them imports none of it.

McpError
 ├── McpUnavailable   the server is down, or went down during the call
 └── McpCallFailed    the server is up but this call failed (timeout, protocol)
"""


class McpError(Exception):
    """A tool call that did not get a result; the text is safe to show."""


class McpUnavailable(McpError):
    pass


class McpCallFailed(McpError):
    pass
