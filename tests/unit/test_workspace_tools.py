"""The file tools stay in their workspace: every hostile path is refused, in every tool."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app.core.events import Event
from app.tools.base import ToolContext, ToolOutput
from app.tools.workspace import Workspace, WorkspaceTool, file_tools

SECRET = "root:x:0:0:the secret outside"

HOSTILE = [
    "../outside/secret.txt",
    "sub/../../outside/secret.txt",
    "..",
    "",
    "/etc/passwd",
    "//etc/passwd",
    "~/secret.txt",
    "..\\outside\\secret.txt",
    "a\x00b",
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET)
    return folder


@pytest.fixture
def workspace(tmp_path: Path, outside: Path) -> Workspace:
    space = Workspace(tmp_path / "ws", max_file_bytes=1000)
    space.create()
    (space.root / "sub").mkdir()
    (space.root / "notes.txt").write_text("alpha\nbeta\ngamma\nbeta again\n")
    return space


def tools(workspace: Workspace) -> dict[str, WorkspaceTool]:
    return {tool.schema.name: tool for tool in file_tools(workspace)}


async def call(tool: WorkspaceTool, **args: Any) -> ToolOutput:
    events: list[Event] = []
    return await tool(args, ToolContext("u", "c", events.append))


def arguments_with(name: str, path: str) -> dict[str, Any]:
    """Arguments for `name` that put the hostile `path` where the tool takes a path."""
    return {
        "read_file": {"path": path},
        "write_file": {"path": path, "content": "pwned"},
        "edit_file": {"path": path, "old_text": "root", "new_text": "pwned"},
        "list_files": {"path": path},
        "grep": {"pattern": "secret", "path": path},
    }[name]


@pytest.mark.parametrize(
    ("name", "path"),
    [
        (name, path)
        for name in ("read_file", "write_file", "edit_file", "list_files", "grep")
        for path in HOSTILE
        # An empty folder means the workspace itself to the tools that take a folder.
        if path or name not in ("list_files", "grep")
    ],
)
async def test_a_path_outside_the_workspace_is_refused_by_every_tool(
    workspace: Workspace, outside: Path, name: str, path: str
) -> None:
    out = await call(tools(workspace)[name], **arguments_with(name, path))

    assert out.is_error
    assert SECRET not in out.text
    assert (outside / "secret.txt").read_text() == SECRET
    assert not (workspace.root.parent / "pwned").exists()


async def test_a_symlink_to_etc_in_the_workspace_leads_nowhere(
    workspace: Workspace, outside: Path
) -> None:
    os.symlink("/etc", workspace.root / "etc")
    os.symlink(outside / "secret.txt", workspace.root / "innocent.txt")
    named = tools(workspace)

    through_dir = await call(named["read_file"], path="etc/passwd")
    through_file = await call(named["read_file"], path="innocent.txt")
    written = await call(named["write_file"], path="innocent.txt", content="pwned")
    edited = await call(named["edit_file"], path="innocent.txt", old_text="root", new_text="x")
    listed = await call(named["list_files"], path="etc")
    grepped = await call(named["grep"], pattern="root|secret")
    globbed = await call(named["glob"], pattern="etc/*")

    assert all(o.is_error for o in (through_dir, through_file, written, edited, listed))
    assert "root:" not in through_dir.text
    assert SECRET not in through_file.text + grepped.text
    assert (outside / "secret.txt").read_text() == SECRET
    assert "passwd" not in globbed.text


async def test_read_file_numbers_lines_and_reads_a_part(workspace: Workspace) -> None:
    named = tools(workspace)

    whole = await call(named["read_file"], path="notes.txt")
    part = await call(named["read_file"], path="notes.txt", offset=2, limit=2)

    # What a file says reaches the model marked as data (app/tools/untrusted.py).
    assert whole.text.splitlines()[:2] == [
        '<untrusted-content source="notes.txt">',
        "     1\talpha",
    ]
    assert whole.text.endswith("\n</untrusted-content>")
    assert part.text.splitlines()[1:3] == ["     2\tbeta", "     3\tgamma"]
    assert "offset=4" in part.text


async def test_edit_file_replaces_exactly_and_refuses_an_ambiguous_edit(
    workspace: Workspace,
) -> None:
    named = tools(workspace)

    ambiguous = await call(named["edit_file"], path="notes.txt", old_text="beta", new_text="B")
    unique = await call(
        named["edit_file"], path="notes.txt", old_text="beta again", new_text="delta"
    )
    missing = await call(named["edit_file"], path="notes.txt", old_text="omega", new_text="x")

    assert ambiguous.is_error
    assert "2 times" in ambiguous.text
    assert not unique.is_error
    assert missing.is_error
    assert (workspace.root / "notes.txt").read_text() == "alpha\nbeta\ngamma\ndelta\n"


async def test_files_are_written_listed_found_and_searched(workspace: Workspace) -> None:
    named = tools(workspace)

    written = await call(named["write_file"], path="out/report.md", content="# Report\nbeta\n")
    listed = await call(named["list_files"])
    globbed = await call(named["glob"], pattern="**/*.md")
    grepped = await call(named["grep"], pattern="^beta", glob="*.txt")

    assert not written.is_error
    assert (workspace.root / "out" / "report.md").read_text() == "# Report\nbeta\n"
    assert "out/report.md  (14 bytes)" in listed.text
    assert globbed.text == "out/report.md"
    assert grepped.text.splitlines()[1:-1] == ["notes.txt:2: beta", "notes.txt:4: beta again"]


async def test_files_larger_than_the_cap_are_neither_written_nor_read(
    workspace: Workspace,
) -> None:
    named = tools(workspace)
    (workspace.root / "big.txt").write_text("x" * 2000)

    written = await call(named["write_file"], path="huge.txt", content="x" * 1001)
    read = await call(named["read_file"], path="big.txt")

    assert written.is_error
    assert not (workspace.root / "huge.txt").exists()
    assert read.is_error
    assert "larger than 1000 bytes" in read.text


async def test_a_binary_file_is_not_dumped_into_the_context(workspace: Workspace) -> None:
    (workspace.root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")

    out = await call(tools(workspace)["read_file"], path="image.png")

    assert out.is_error
    assert "binary" in out.text
