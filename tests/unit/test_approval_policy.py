"""Which tool calls wait for the user's yes: the setting, the turn's `toolApproval`, MCP hints
and a skill's `allowed-tools` (app/agents/approvals.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from app.agents.approvals import ApprovalAnswer, ApprovalPolicy, ApprovalSettings, allowed_tools


@dataclass
class Local:
    """A tool of our own (bash, write_file, read_file, ...)."""


@dataclass
class Remote:
    """An MCP tool, as the policy sees one: its server and the server's hints."""

    server: str = "files"
    destructive: bool = False
    read_only: bool = False


def policy(setting: str = "") -> ApprovalPolicy:
    return ApprovalPolicy.from_settings(ApprovalSettings(tool_approval=setting))


def test_nothing_asks_by_default_but_an_mcp_tool_marked_destructive() -> None:
    assert not policy().asks("bash", Local(), None)
    assert not policy().asks("files__list", Remote(), None)
    assert policy().asks("files__delete", Remote(destructive=True), None)
    assert not policy().asks("files__delete", Remote(destructive=True), "auto")


@pytest.mark.parametrize(
    ("setting", "asked"),
    [
        ("bash,write_file, edit_file", {"bash", "write_file"}),
        ("mcp:*", {"files__list"}),
        ("mcp:files", {"files__list"}),
        ("mcp:other", set()),
        ("*", {"bash", "write_file", "read_file", "files__list"}),
    ],
)
def test_the_setting_names_the_tools_that_ask(setting: str, asked: set[str]) -> None:
    tools: dict[str, object] = {
        "bash": Local(),
        "write_file": Local(),
        "read_file": Local(),
        "files__list": Remote(),
    }
    rule = policy(setting)
    assert {name for name, tool in tools.items() if rule.asks(name, tool, None)} == asked
    assert {name for name, tool in tools.items() if rule.asks(name, tool, "auto")} == asked


def test_ask_asks_for_every_acting_tool_and_lets_reads_run() -> None:
    rule = policy()
    assert rule.asks("bash", Local(), "ask")
    assert rule.asks("write_file", Local(), "ask")
    assert rule.asks("files__move", Remote(), "ask")
    assert not rule.asks("read_file", Local(), "ask")
    assert not rule.asks("web_search", Local(), "ask")
    assert not rule.asks("files__list", Remote(read_only=True), "ask")
    assert not rule.asks("no_such_tool", None, "ask")


def test_a_skills_allowed_tools_narrow_what_runs_without_asking() -> None:
    allowed = allowed_tools("Bash(python:*) Read")
    assert allowed == {"bash", "read_file"}
    assert allowed_tools(["write_file", "grep"]) == {"write_file", "grep"}
    assert allowed_tools(None) == set()
    rule = policy()
    assert not rule.asks("bash", Local(), None, allowed)
    assert rule.asks("write_file", Local(), None, allowed)
    assert not rule.asks("write_file", Local(), "auto", allowed)
    assert not rule.asks("grep", Local(), None, allowed)


def test_a_rejection_tells_the_model_the_users_reason() -> None:
    assert "Declined by the user" in ApprovalAnswer("apr_1", "reject").declined()
    assert ApprovalAnswer("apr_1", "reject", message="not now").declined().endswith("not now")
