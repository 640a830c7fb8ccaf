"""MCP servers' tools as the model sees them, and web search from an MCP server.

A server's tool `search` on the server `docs` is offered as `docs__search`:
the name keeps to what every provider accepts (`[A-Za-z0-9_-]`, at most 64
characters, starting with a letter; characters outside are replaced by `_`, and
a name cut short or met twice ends in a short hash of the original), and its
description and JSON schema are the server's own. Tools are listed per turn,
so a server that is down offers nothing until it is back.

A call answers what the server answered, as text the model reads: text
parts as they are, links and embedded text resources inline, images and
other binary parts as a placeholder; cut at `result_max_chars`. Whatever
goes wrong (the server is down, the call times out, the server says it
failed) is a tool error the model reads, never a failed turn. Sources found
in a result (search results in Tavily's text format, a `results` list of
`{url, title, content}`, links to web pages) become the turn's references.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import TYPE_CHECKING, Any

import orjson

from app.core.events import Reference
from app.core.tools import ToolSchema
from app.tools.base import Tool, ToolContext, ToolOutput
from app.tools.mcp import McpError, McpHub
from app.tools.untrusted import untrusted
from app.tools.web_search import WebSearch, found

if TYPE_CHECKING:
    from mcp_types import CallToolResult
    from mcp_types import Tool as RemoteTool

    from app.tools.mcp.connection import McpConnection

MAX_NAME = 64
SEPARATOR = "__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_DESCRIPTION_CHARS = 2000
SEARCH_TOOL_NAMES = ("tavily_search", "tavily-search", "web_search", "search")
"""Tried in order when `WEB_SEARCH_PROVIDER=mcp:<server>` names no tool."""


def tool_names(server: str, remote: list[str]) -> dict[str, str]:
    """Each remote tool's name as the model sees it, by remote name; unique, within the rules."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for original in remote:
        name = f"{server}{SEPARATOR}{_UNSAFE.sub('_', original)}"
        if len(name) > MAX_NAME or name in taken or name != f"{server}{SEPARATOR}{original}":
            digest = hashlib.sha256(original.encode()).hexdigest()[:8]
            name = f"{name[: MAX_NAME - 9]}_{digest}"
        taken.add(name)
        names[original] = name
    return names


class McpTool:
    """One tool of an MCP server, under its namespaced name."""

    def __init__(
        self, connection: McpConnection, remote: RemoteTool, name: str, result_max_chars: int
    ) -> None:
        self._connection = connection
        self._remote = remote.name
        self._max_chars = result_max_chars
        self.server = connection.name
        hints = remote.annotations
        self.destructive = bool(hints and hints.destructive_hint)
        """The server marks the tool as one that may destroy: it asks the user first by default."""
        self.read_only = bool(hints and hints.read_only_hint)
        parameters = dict(remote.input_schema or {})
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        description = remote.description or remote.title or remote.name
        self.schema = ToolSchema(name, description[:_DESCRIPTION_CHARS], parameters)

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            result = await self._connection.call(self._remote, args)
        except McpError as exc:
            return ToolOutput(f"The tool {self.schema.name} failed: {exc}.", is_error=True)
        text = untrusted(bounded(render(result), self._max_chars), self.schema.name)
        return ToolOutput(text, is_error=bool(result.is_error), references=references(result))


class McpWebSearch(WebSearch):
    """`web_search` answered by an MCP server's search tool (Tavily's MCP server, say)."""

    def __init__(
        self, connection: McpConnection, tool: str | None, max_results: int, result_max_chars: int
    ) -> None:
        self._connection = connection
        self._tool = tool
        self._max_results = max_results
        self._max_chars = result_max_chars

    async def search(self, query: str) -> ToolOutput:
        remote = self._search_tool()
        if remote is None:
            return ToolOutput("Web search is unavailable right now.", is_error=True)
        arguments: dict[str, Any] = {"query": query}
        if "max_results" in (remote.input_schema or {}).get("properties", {}):
            arguments["max_results"] = self._max_results
        try:
            result = await self._connection.call(remote.name, arguments)
        except McpError as exc:
            return ToolOutput(f"Web search failed: {exc}.", is_error=True)
        if result.is_error:
            return ToolOutput(bounded(render(result), self._max_chars), is_error=True)
        refs = references(result)
        if refs:
            return found(query, refs)
        return ToolOutput(
            untrusted(bounded(render(result), self._max_chars), f"web search: {query}")
        )

    def _search_tool(self) -> RemoteTool | None:
        tools = {tool.name: tool for tool in self._connection.tools}
        if self._tool is not None:
            return tools.get(self._tool)
        for name in SEARCH_TOOL_NAMES:
            if name in tools:
                return tools[name]
        return next((tool for name, tool in tools.items() if "search" in name), None)


class McpToolbox:
    """What agents get from the MCP servers: tools by agent kind, and a web search."""

    def __init__(self, hub: McpHub, result_max_chars: int, search_max_results: int) -> None:
        self._hub = hub
        self._max_chars = result_max_chars
        self._search_max_results = search_max_results

    def tools_for(self, kind: str) -> list[Tool]:
        """The tools of every server that is up and serves `kind`, as of now."""
        tools: list[Tool] = []
        for conn in self._hub.connections.values():
            if kind not in conn.config.agents or conn.status != "up":
                continue
            remote = conn.tools
            names = tool_names(conn.name, [tool.name for tool in remote])
            tools.extend(McpTool(conn, tool, names[tool.name], self._max_chars) for tool in remote)
        return tools

    def web_search(self, provider: str) -> Tool:
        """The search of `mcp:<server>` or `mcp:<server>/<tool>`; a `ValueError` for a
        server `MCP_SERVERS` does not name."""
        server, _, tool = provider.removeprefix("mcp:").partition("/")
        connection = self._hub.connections.get(server)
        if connection is None:
            raise ValueError(f"WEB_SEARCH_PROVIDER names {server!r}, which MCP_SERVERS lacks")
        return McpWebSearch(connection, tool or None, self._search_max_results, self._max_chars)


def render(result: CallToolResult) -> str:
    # A result exists only once a connection has loaded the client: no cost here.
    from mcp_types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ResourceLink):
            parts.append(f"[{block.title or block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(resource.text)
            else:
                parts.append(
                    f"[{resource.mime_type or 'binary'} resource {resource.uri}, not shown]"
                )
        else:
            parts.append(f"[{block.type} ({getattr(block, 'mime_type', '')}), not shown]")
    if not parts and result.structured_content is not None:
        parts.append(orjson.dumps(result.structured_content).decode())
    return "\n".join(parts) or "(no output)"


def bounded(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[… {len(text) - max_chars} more characters cut]"


def references(result: CallToolResult) -> list[Reference]:
    """The sources a result carries: structured `results`, Tavily-style text, web links."""
    from mcp_types import ResourceLink, TextContent

    found_refs: list[Reference] = []
    if isinstance(result.structured_content, dict):
        found_refs += Reference.listed(result.structured_content.get("results"))
    for block in result.content:
        if isinstance(block, TextContent):
            found_refs += _listed_json(block.text) or _tavily_text(block.text)
        elif isinstance(block, ResourceLink) and str(block.uri).startswith(("http://", "https://")):
            found_refs.append(
                Reference(str(block.uri), block.title or block.name, block.description or "")
            )
    unique: dict[str, Reference] = {}
    for ref in found_refs:
        unique.setdefault(ref.url, ref)
    return list(unique.values())


def _listed_json(text: str) -> list[Reference]:
    if not text.lstrip().startswith("{"):
        return []
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []
    return Reference.listed(data.get("results")) if isinstance(data, dict) else []


def _tavily_text(text: str) -> list[Reference]:
    """Results in the text the Tavily MCP server writes: `Title:`, `URL:`, `Content:` lines."""
    refs: list[Reference] = []
    title = ""
    awaiting_content = False
    for line in text.splitlines():
        key, _, value = line.partition(": ")
        value = value.strip()
        if key == "Title":
            title = value
        elif key == "URL" and value.startswith(("http://", "https://")):
            refs.append(Reference(value, title, ""))
            title, awaiting_content = "", True
        elif key == "Content" and awaiting_content:
            refs[-1] = dataclasses.replace(refs[-1], content=value)
            awaiting_content = False
    return refs
