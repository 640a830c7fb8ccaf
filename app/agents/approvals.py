"""Which tool calls wait for the user's yes, and what a decision on one means to the model.

The policy (API.md, "Asking before acting") comes from three places:

- `TOOL_APPROVAL` names tools that always ask: `bash,write_file,edit_file`,
  `mcp:*` (every MCP tool), `mcp:<server>` (one server's), `*` (every tool);
- a turn's `toolApproval`: `ask` asks for every acting tool (anything that
  is not a read: see `READ_ONLY_TOOLS`), `auto` for none the setting does
  not name; without it, MCP tools their server marks `destructiveHint` ask;
- a loaded skill's `allowed-tools` front matter: once the model has loaded
  such a skill, an acting tool it does not list asks.

A decision is `approve` (run the call as asked), `edit` (run it with other
arguments) or `reject` (the model reads `DECLINED`, with the user's reason).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

from app.config import SettingsPart

ApprovalMode = Literal["ask", "auto"]
Decision = Literal["approve", "reject", "edit"]
DECISIONS: tuple[Decision, ...] = ("approve", "reject", "edit")

READ_ONLY_TOOLS = frozenset(
    {
        "web_search",
        "fetch_page",
        "search_document",
        "read_file",
        "list_files",
        "glob",
        "grep",
        "load_skill",
    }
)
"""Tools that only read: `toolApproval: ask` lets them run."""
DECLINED = "Declined by the user: the tool call did not run."


class ApprovalSettings(SettingsPart):
    tool_approval: str


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """The user's decision on a pending approval, as a resumed turn carries it."""

    approval_id: str
    decision: Decision
    arguments: dict[str, Any] | None = None
    """`edit`: the arguments to run the call with (a plan review: `{tasks: [...]}`)."""
    message: str | None = None
    """`reject`: the user's reason, given to the model."""

    def declined(self) -> str:
        """What the model reads for a rejected call."""
        return f"{DECLINED} Their reason: {self.message}" if self.message else DECLINED


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    names: frozenset[str] = field(default_factory=frozenset)
    """`TOOL_APPROVAL`'s entries."""

    @classmethod
    def from_settings(cls, settings: ApprovalSettings) -> ApprovalPolicy:
        names = (part.strip() for part in settings.tool_approval.split(","))
        return cls(frozenset(name for name in names if name))

    def asks(
        self,
        name: str,
        tool: object | None,
        mode: ApprovalMode | None,
        allowed: Collection[str] | None = None,
    ) -> bool:
        """Whether a call of `tool` (named `name` to the model) waits for the user's yes.

        `allowed`: the loaded skills' `allowed-tools`; None when none narrows them.
        A call of no tool at all never asks: it runs nothing (its result says so).
        """
        if tool is None:
            return False
        server = getattr(tool, "server", None)
        if "*" in self.names or name in self.names:
            return True
        if server is not None and ({"mcp:*", f"mcp:{server}"} & self.names):
            return True
        acting = name not in READ_ONLY_TOOLS and not getattr(tool, "read_only", False)
        if mode == "auto" or not acting:
            return False
        if mode == "ask" or getattr(tool, "destructive", False):
            return True
        return allowed is not None and name not in allowed


APPROVAL_PREFIX = "apr_"
"""How an approval id begins, so a client's answer to an approval is told from other answers."""


def new_approval_id() -> str:
    return f"{APPROVAL_PREFIX}{uuid.uuid4().hex}"


_CLAUDE_NAMES = {"read": "read_file", "write": "write_file", "edit": "edit_file"}
"""`allowed-tools` as Claude's skills write it (`Bash(python:*)`, `Read`), in our tools' names."""


def allowed_tools(value: object) -> set[str]:
    """A skill's `allowed-tools` front matter (a list, or names apart by spaces or commas)."""
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, list):
        return set()
    names = (str(item).split("(", 1)[0].strip().lower() for item in value)
    return {_CLAUDE_NAMES.get(name, name) for name in names if name}
