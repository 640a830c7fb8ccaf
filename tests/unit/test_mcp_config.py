"""`MCP_SERVERS` as an operator writes it, tool names as providers accept them, and the
sources an MCP result carries."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from mcp_types import CallToolResult, ResourceLink, TextContent

from app.core.events import Reference
from app.tools.mcp import parse_servers
from app.tools.mcp.toolbox import references, tool_names

PROVIDER_TOOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
"""What OpenAI, Anthropic, Gemini and DashScope all accept."""


def test_servers_come_inline_from_a_file_or_in_the_mcp_servers_shape(tmp_path: Path) -> None:
    inline = '[{"name": "files", "command": "npx", "args": ["-y", "fs"]}]'
    hosts = {"mcpServers": {"wiki": {"type": "http", "url": "https://mcp.example.com/mcp"}}}
    path = tmp_path / "mcp.json"
    path.write_bytes(orjson.dumps(hosts))

    [files] = parse_servers(inline)
    [wiki] = parse_servers(str(path))

    assert (files.name, files.transport, files.args, files.agents) == (
        "files",
        "stdio",
        ["-y", "fs"],
        ["chat"],
    )
    assert (wiki.name, wiki.transport, wiki.url) == ("wiki", "http", "https://mcp.example.com/mcp")
    assert parse_servers("") == []


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ('[{"name": "x", "command": "a", "url": "https://h/?key=hunter2-key"}]', "either"),
        ('[{"name": "x", "url": "ftp://h/?key=hunter2-key"}]', "http:// or https://"),
        ('[{"name": "a__b", "command": "hunter2-key"}]', "name must be"),
        ('[{"name": "x", "command": "c", "headers": {"A": ["hunter2-key"]}}]', "headers.A"),
        ('[{"name": "x", "command": "c"}, {"name": "x", "url": "https://h"}]', "twice"),
        ('[{"name": "x", "command": "hunter2-key",', "not valid JSON"),
        ('{"servers": ["hunter2-key"]}', "mcpServers"),
    ],
)
def test_a_bad_configuration_says_what_and_where_but_not_the_values(value: str, said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)) as error:
        parse_servers(value)

    assert "hunter2" not in str(error.value)


def test_a_missing_file_is_named() -> None:
    with pytest.raises(ValueError, match=re.escape("cannot read /nowhere/mcp.json")):
        parse_servers("/nowhere/mcp.json")


def test_tool_names_are_namespaced_within_every_providers_rules() -> None:
    long = "describe_" + "very_" * 20 + "long"
    names = tool_names("docs", ["search", "web.fetch", "web_fetch", "web-fetch", long])

    assert names["search"] == "docs__search"
    assert names["web_fetch"] == "docs__web_fetch"
    assert names["web-fetch"] == "docs__web-fetch"
    assert names["web.fetch"].startswith("docs__web_fetch_")
    assert names[long].startswith("docs__describe_very_")
    assert len(set(names.values())) == len(names)
    assert all(PROVIDER_TOOL_NAME.fullmatch(name) for name in names.values())
    # The same list names the same way every time (a turn's names match the next one's).
    assert tool_names("docs", ["search", "web.fetch", "web_fetch", "web-fetch", long]) == names


def test_sources_come_from_tavily_text_result_lists_and_web_links() -> None:
    tavily = (
        "Answer: Seven years.\nDetailed Results:\n\nTitle: Pumps\nURL: https://a.test/1\n"
        "Content: About pumps.\n\nURL: https://a.test/2\nContent: More.\n\n"
        "Images:\n\n[1] URL: https://a.test/img.png"
    )
    listed = orjson.dumps({"results": [{"url": "https://b.test/x", "title": "X"}]}).decode()
    result = CallToolResult(
        content=[
            TextContent(type="text", text=tavily),
            TextContent(type="text", text=listed),
            ResourceLink(type="resource_link", name="c", uri="https://c.test/c", title="C"),
            ResourceLink(type="resource_link", name="local", uri="file:///etc/passwd"),
        ]
    )

    assert references(result) == [
        Reference("https://a.test/1", "Pumps", "About pumps."),
        Reference("https://a.test/2", "", "More."),
        Reference("https://b.test/x", "X", ""),
        Reference("https://c.test/c", "C", ""),
    ]
