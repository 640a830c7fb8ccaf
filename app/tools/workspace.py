"""A conversation's workspace, and the file tools that work in it and nowhere else.

Every path a tool takes is relative to the workspace: an absolute path, a
`..` component, a NUL byte or a symlink whose target lies outside is refused
before anything is opened, so a model (or a file it was shown) cannot make
the service read its own configuration or another user's files. The last
component is opened without following a symlink, so a link made between the
check and the open is refused too. Files are capped in size on both read
and write.

What has been handed to the user is recorded beside the workspace (out of
the shell's reach), so a file made by a turn that was stopped or failed is
handed over by the next turn that completes.

When the service runs as root, the sandboxed shell runs as an unprivileged
user (tools/shell.py): what the tools create is handed to that user, so the
shell can change what the tools wrote and the other way round.

    WorkspaceError     a path outside, a file too large, not unique, not found
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from app.core.tools import ToolSchema
from app.tools.base import ToolContext, ToolOutput
from app.tools.untrusted import untrusted

DEFAULT_READ_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_LISTED = 500
MAX_GREP_MATCHES = 200
BINARY_SNIFF_BYTES = 8192


Files = dict[str, tuple[int, int]]
"""Each file's (modification time, size), by its path in the workspace."""


class WorkspaceError(Exception):
    """A request a tool refuses; its text is for the model."""


def workspace_root(data_dir: Path, user_id: str, conversation_id: str) -> Path:
    """Where a conversation's workspace lives: `DATA_DIR/workspaces/<user>/<conversation>`.

    The user id is hashed: it comes from configuration and may hold any
    character; the conversation id is already checked against a safe pattern.
    """
    user = hashlib.sha256(user_id.encode()).hexdigest()[:32]
    return data_dir / "workspaces" / user / conversation_id


async def delete_workspace(data_dir: Path, user_id: str, conversation_id: str) -> None:
    """Remove a conversation's workspace with it (nothing to do when it never had one)."""
    workspace = Workspace(workspace_root(data_dir, user_id, conversation_id), 0)
    await asyncio.to_thread(shutil.rmtree, workspace.root, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        await asyncio.to_thread(workspace.record.unlink)


@dataclass(frozen=True, slots=True)
class Workspace:
    root: Path
    max_file_bytes: int
    owner: int | None = None
    """The uid (and gid) the sandboxed shell runs as, when it differs from ours."""

    def create(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.give(self.root)

    def give(self, path: Path) -> None:
        """Hand what a tool made to the shell's user, so each can change the other's files."""
        if self.owner is not None:
            os.chown(path, self.owner, self.owner, follow_symlinks=False)

    def resolve(self, path: str) -> Path:
        """The real path of `path` inside the workspace; raises `WorkspaceError` for any other.

        Refused: empty, NUL, absolute (or `~`), any `..` component, and
        anything whose resolved location (symlinks followed) is outside.
        """
        if not path or "\x00" in path:
            raise WorkspaceError("A path is required (relative to the workspace).")
        relative = PurePosixPath(path.replace("\\", "/"))
        if relative.is_absolute() or path.startswith("~"):
            raise WorkspaceError(
                f"{path!r} is absolute: paths are relative to the workspace (e.g. 'report.md')."
            )
        if ".." in relative.parts:
            raise WorkspaceError(f"{path!r} leaves the workspace: '..' is not allowed.")
        root = self.root.resolve()
        resolved = (root / relative).resolve()
        if resolved != root and root not in resolved.parents:
            raise WorkspaceError(f"{path!r} points outside the workspace.")
        return resolved

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root.resolve()).as_posix() or "."

    def read_bytes(self, path: str) -> bytes:
        target = self.resolve(path)
        if not target.is_file():
            raise WorkspaceError(f"No file {path!r} in the workspace.")
        if target.stat().st_size > self.max_file_bytes:
            raise WorkspaceError(f"{path!r} is larger than {self.max_file_bytes} bytes.")
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as file:
            return file.read(self.max_file_bytes + 1)

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            raise WorkspaceError(
                f"{path!r} is a binary file: inspect it with a script in the shell instead."
            )
        return data.decode("utf-8", errors="replace")

    def write_bytes(self, path: str, data: bytes) -> Path:
        if len(data) > self.max_file_bytes:
            raise WorkspaceError(f"The content is larger than {self.max_file_bytes} bytes.")
        target = self.resolve(path)
        if target == self.root.resolve() or target.is_dir():
            raise WorkspaceError(f"{path!r} is a folder.")
        self._make_parents(target.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        fd = os.open(target, flags, 0o644)
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        self.give(target)
        return target

    def files(self, under: str = ".") -> list[Path]:
        """Regular files below `under`, sorted; symlinks are listed but never followed."""
        base = self.resolve(under)
        if not base.is_dir():
            raise WorkspaceError(f"No folder {under!r} in the workspace.")
        found: list[Path] = []
        for folder, dirs, names in os.walk(base):
            dirs.sort()
            found.extend(Path(folder, name) for name in sorted(names))
        return found

    def snapshot(self) -> Files:
        """Every regular file now (symlinks left out), to tell what was made or changed."""
        if not self.root.is_dir():
            return {}
        result: Files = {}
        for path in self.files():
            info = path.lstat()
            if path.is_file() and not path.is_symlink():
                result[self.relative(path)] = (info.st_mtime_ns, info.st_size)
        return result

    @property
    def record(self) -> Path:
        """What was handed to the user: beside the workspace, where the shell cannot write."""
        return self.root.with_name(f"{self.root.name}.handed.json")

    def handed(self) -> Files:
        try:
            saved = orjson.loads(self.record.read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return {}
        return {str(name): (int(seen[0]), int(seen[1])) for name, seen in saved.items()}

    def mark_handed(self, files: Files) -> None:
        partial = self.record.with_suffix(".partial")
        partial.write_bytes(orjson.dumps(files))
        partial.replace(self.record)

    def _make_parents(self, folder: Path) -> None:
        missing: list[Path] = []
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for path in reversed(missing):
            path.mkdir()
            self.give(path)


def _schema(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> ToolSchema:
    parameters = {"type": "object", "properties": properties, "required": required}
    return ToolSchema(name, description, parameters)


_PATH = {"type": "string", "description": "A path relative to the workspace."}


class WorkspaceTool:
    """A file tool: its blocking work in a thread, a refused request as an error result."""

    schema: ToolSchema

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            return ToolOutput(await asyncio.to_thread(self.run, args))
        except WorkspaceError as exc:
            return ToolOutput(str(exc), is_error=True)
        except OSError as exc:
            return ToolOutput(f"{type(exc).__name__}: {exc.strerror}", is_error=True)

    def run(self, args: dict[str, Any]) -> str:
        raise NotImplementedError


class ReadFile(WorkspaceTool):
    schema = _schema(
        "read_file",
        "Read a text file of the workspace, with line numbers. Long files: read a part with "
        "`offset` (first line, from 1) and `limit` (number of lines).",
        {
            "path": _PATH,
            "offset": {"type": "integer", "minimum": 1},
            "limit": {"type": "integer", "minimum": 1},
        },
        ["path"],
    )

    def run(self, args: dict[str, Any]) -> str:
        lines = self.workspace.read_text(str(args.get("path", ""))).splitlines()
        offset = max(1, _int(args.get("offset"), 1))
        limit = max(1, _int(args.get("limit"), DEFAULT_READ_LINES))
        shown = lines[offset - 1 : offset - 1 + limit]
        if not shown:
            return f"(the file has {len(lines)} lines; nothing at line {offset})"
        numbered = [f"{n:6}\t{line[:MAX_LINE_CHARS]}" for n, line in enumerate(shown, start=offset)]
        end = offset + len(shown) - 1
        if end < len(lines):
            numbered.append(
                f"(lines {offset}-{end} of {len(lines)}; read on with offset={end + 1})"
            )
        return untrusted("\n".join(numbered), str(args.get("path", "")))


class WriteFile(WorkspaceTool):
    schema = _schema(
        "write_file",
        "Create or overwrite a file of the workspace with the given text (folders are made).",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    )

    def run(self, args: dict[str, Any]) -> str:
        content = str(args.get("content", ""))
        target = self.workspace.write_bytes(str(args.get("path", "")), content.encode())
        return f"Wrote {len(content.encode())} bytes to {self.workspace.relative(target)}."


class EditFile(WorkspaceTool):
    schema = _schema(
        "edit_file",
        "Replace an exact piece of text in a workspace file. `old_text` must occur exactly once "
        "(include surrounding lines to make it unique), unless `replace_all` is true.",
        {
            "path": _PATH,
            "old_text": {"type": "string"},
            "new_text": {"type": "string"},
            "replace_all": {"type": "boolean"},
        },
        ["path", "old_text", "new_text"],
    )

    def run(self, args: dict[str, Any]) -> str:
        path = str(args.get("path", ""))
        old, new = str(args.get("old_text", "")), str(args.get("new_text", ""))
        if not old:
            raise WorkspaceError("`old_text` must not be empty.")
        text = self.workspace.read_text(path)
        count = text.count(old)
        if count == 0:
            raise WorkspaceError(f"`old_text` does not occur in {path!r}; read the file first.")
        if count > 1 and not args.get("replace_all"):
            raise WorkspaceError(
                f"`old_text` occurs {count} times in {path!r}: include more context, "
                "or set replace_all."
            )
        self.workspace.write_bytes(path, text.replace(old, new).encode())
        return f"Replaced {count} occurrence(s) in {path}."


class ListFiles(WorkspaceTool):
    schema = _schema(
        "list_files",
        "List the files of the workspace (or of one folder in it), with their sizes.",
        {"path": {**_PATH, "default": "."}},
        [],
    )

    def run(self, args: dict[str, Any]) -> str:
        files = self.workspace.files(str(args.get("path") or "."))
        if not files:
            return "(no files)"
        return _listing([f"{self.workspace.relative(f)}  ({_size(f)} bytes)" for f in files])


class GlobFiles(WorkspaceTool):
    schema = _schema(
        "glob",
        "Find workspace files whose path matches a glob pattern, e.g. '**/*.csv' or 'out/*.docx'.",
        {"pattern": {"type": "string"}},
        ["pattern"],
    )

    def run(self, args: dict[str, Any]) -> str:
        pattern = str(args.get("pattern", "")).lstrip("/")
        if not pattern:
            raise WorkspaceError("A `pattern` is required.")
        names = [self.workspace.relative(f) for f in self.workspace.files()]
        matched = [n for n in names if _glob_match(n, pattern)]
        return _listing(matched) if matched else f"No file matches {pattern!r}."


class Grep(WorkspaceTool):
    schema = _schema(
        "grep",
        "Search the workspace's text files for a regular expression; answers path:line: text.",
        {
            "pattern": {"type": "string", "description": "A Python regular expression."},
            "path": {**_PATH, "default": "."},
            "glob": {"type": "string", "description": "Only files matching this glob."},
            "ignore_case": {"type": "boolean"},
        },
        ["pattern"],
    )

    def run(self, args: dict[str, Any]) -> str:
        try:
            flags = re.IGNORECASE if args.get("ignore_case") else 0
            regex = re.compile(str(args.get("pattern", "")), flags)
        except re.error as exc:
            raise WorkspaceError(f"Invalid regular expression: {exc}") from exc
        only = str(args.get("glob") or "")
        matches: list[str] = []
        for file in self.workspace.files(str(args.get("path") or ".")):
            name = self.workspace.relative(file)
            if (only and not _glob_match(name, only)) or file.is_symlink():
                continue
            try:
                text = self.workspace.read_text(name)
            except WorkspaceError:
                continue
            for number, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    matches.append(f"{name}:{number}: {line[:MAX_LINE_CHARS]}")
                    if len(matches) >= MAX_GREP_MATCHES:
                        matches.append(f"(stopped at {MAX_GREP_MATCHES} matches)")
                        return untrusted("\n".join(matches), "grep")
        return untrusted("\n".join(matches), "grep") if matches else "No match."


def file_tools(workspace: Workspace) -> list[WorkspaceTool]:
    return [cls(workspace) for cls in (ReadFile, WriteFile, EditFile, ListFiles, GlobFiles, Grep)]


def _glob_match(name: str, pattern: str) -> bool:
    """`**/` also matches no folder at all, as in a shell with globstar."""
    return fnmatch.fnmatchcase(name, pattern) or (
        pattern.startswith("**/") and fnmatch.fnmatchcase(name, pattern[3:])
    )


def _listing(lines: list[str]) -> str:
    if len(lines) > MAX_LISTED:
        return "\n".join([*lines[:MAX_LISTED], f"(and {len(lines) - MAX_LISTED} more)"])
    return "\n".join(lines)


def _size(path: Path) -> int:
    return path.lstat().st_size


def _int(value: Any, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default
