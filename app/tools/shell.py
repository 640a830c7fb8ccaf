"""The `bash` tool: one command in a child process inside bubblewrap, with limits.

What a command can reach is what it is given, not what the service can:

- the system (`/usr` and the few `/etc` files programs need), Python and
  its libraries, and the skills, all read-only; the conversation's workspace
  at `/workspace`, the only place it can write besides a private `/tmp` in
  memory (no larger than one file may be); a private `/proc`;
- no network (a new network namespace with only a loopback of its own), its
  own PID, IPC and UTS namespaces (and user, unless the service is root; see
  below), a new session (no terminal to
  inject into), and an environment built from nothing: no key, no
  `DATABASE_URL`, not even bubblewrap's own (started with an empty one,
  because bubblewrap is PID 1 inside and its environment shows there);
- when the service runs as root, an unprivileged uid (65534), because the
  process limit does not bind root;
- limits set with `prlimit` before bubblewrap starts: address space, CPU
  seconds, processes, file size, open files, no core dumps;
- a wall-clock limit per call: the whole process group is killed, and
  bubblewrap dies with it (`--die-with-parent`) taking every process of the
  sandbox (PID 1 of the namespace) along, background children included. A
  stop cancels the call, which kills the same way.

Output (stdout and stderr together) is kept up to a cap, its head and its
tail, with the size of what was cut in between.

Where bubblewrap is missing, or cannot start here (no user namespaces in a
container: it is tried once, with `true`), the tool answers the model a
clear error and never runs the command unconfined; `SKILLS_SHELL=unsandboxed` is the only
way to do that, and the service warns at start-up when it is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.config import SettingsPart, ShellMode
from app.core.events import ThinkingEvent
from app.core.processes import kill_group
from app.core.tools import ToolSchema
from app.tools.base import ToolContext, ToolOutput
from app.tools.untrusted import untrusted
from app.tools.workspace import Workspace

SANDBOX_WORKSPACE = "/workspace"
SANDBOX_SKILLS = "/skills"
NOBODY = 65534
FLOOD_BYTES = 16 * 1024**2
"""Output beyond which a command is killed: it is flooding, not working (`yes`)."""
DRAIN_SECONDS = 1.0
"""How long output is still read once the command's processes are killed."""
OPEN_FILES = 1024
"""Files one command's processes may hold open."""
_READ_BYTES = 65536
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "mime.types",
)
"""What of `/etc` programs need; the rest (and any secret a deployment keeps there) stays out."""
_NAMESPACES = (
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-uts",
    "--unshare-cgroup-try",
)
_SETPRIV_CAPS = ("--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")


class ShellLimits(
    SettingsPart, prefix="skills_shell_", renamed={"file_bytes": "skills_max_file_bytes"}
):
    timeout_seconds: float
    max_timeout_seconds: float
    output_bytes: int
    memory_bytes: int
    processes: int
    file_bytes: int


@dataclass(frozen=True, slots=True)
class ShellResult:
    output: str
    exit_code: int | None
    """None when the command was killed at the time limit."""
    timed_out: bool
    cut_bytes: int
    """Output dropped between the head and the tail that were kept."""
    flooded: bool = False
    """Killed for printing more than `FLOOD_BYTES`."""


@dataclass(frozen=True, slots=True)
class Mount:
    source: Path
    target: str


class Shell:
    """Runs commands in a workspace, sandboxed (the default) or, when asked, not."""

    def __init__(
        self,
        limits: ShellLimits,
        mode: ShellMode,
        mounts: Sequence[Mount],
        bwrap: str | None,
    ) -> None:
        """`bwrap`: the bubblewrap program (`shutil.which("bwrap")`), None where there is none."""
        self.limits = limits
        self.mode = mode
        self._mounts = list(mounts)
        self._bwrap = bwrap
        self._prlimit = shutil.which("prlimit")
        self.run_as = NOBODY if os.geteuid() == 0 else None
        """The uid (and gid) commands run as; None: the service's own."""
        self._started: str | None = None
        """Empty once a command ran; why none can, once one failed to start."""
        self._trying = asyncio.Lock()

    def unavailable(self) -> str | None:
        """Why no command can run here, or None."""
        if self._prlimit is None:
            return "the shell needs `prlimit` (util-linux), which is not installed"
        if self.mode == "sandboxed" and self._bwrap is None:
            return (
                "the shell runs only inside the bubblewrap sandbox, and `bwrap` is not installed"
                " (scripts/install-sandbox installs it)"
            )
        return None

    async def cannot_run(self) -> str | None:
        """Why no command can run here, or None; the sandbox is tried once, with `true`."""
        reason = self.unavailable()
        if reason is not None or self.mode == "unsandboxed":
            return reason
        async with self._trying:
            if self._started is None:
                with tempfile.TemporaryDirectory() as folder:
                    os.chmod(folder, 0o777)
                    tried = await self.run("true", Path(folder))
                self._started = (
                    ""
                    if tried.exit_code == 0
                    else f"the sandbox could not start here ({tried.output.strip()[:300]})"
                )
        return self._started or None

    def command_line(self, command: str, workspace: Path) -> list[str]:
        """The argv that runs `command`: prlimit, then bubblewrap, then bash."""
        limits = self.limits
        argv = [
            str(self._prlimit),
            f"--as={limits.memory_bytes}",
            f"--cpu={int(limits.max_timeout_seconds) + 1}",
            f"--nproc={limits.processes}",
            f"--fsize={limits.file_bytes}",
            f"--nofile={OPEN_FILES}",
            "--core=0",
            "--",
        ]
        if self.mode == "unsandboxed":
            return [*argv, *self._drop_to_user(), "/bin/bash", "-c", command]
        argv += [str(self._bwrap), *_system_binds()]
        # The private /tmp first: Python may live under /tmp (a checkout there, a CI clone),
        # and a tmpfs mounted after its bind would hide it.
        argv += ["--perms", "01777", "--size", str(limits.file_bytes), "--tmpfs", "/tmp"]
        argv += _parent_dirs(self._mounts)
        for mount in self._mounts:
            argv += ["--ro-bind", str(mount.source), mount.target]
        argv += ["--bind", str(workspace), SANDBOX_WORKSPACE, "--chdir", SANDBOX_WORKSPACE]
        argv += ["--dev", "/dev", "--proc", "/proc"]
        argv += ["--die-with-parent", "--new-session", "--clearenv"]
        for name, value in self._environment(SANDBOX_WORKSPACE).items():
            argv += ["--setenv", name, value]
        if self.run_as is None:
            return [*argv, "--unshare-all", "--", "/bin/bash", "-c", command]
        # As root: no user namespace (it would map the sandbox's user back to root, whom
        # the process limit does not bind); bubblewrap keeps just what `setpriv` needs to
        # become nobody, and setpriv drops every capability for good.
        argv += [*_NAMESPACES, *_SETPRIV_CAPS, "--", *self._drop_to_user()]
        return [*argv, "/bin/bash", "-c", command]

    def _drop_to_user(self) -> list[str]:
        """`setpriv` to `run_as` with no groups and no capabilities, for good; empty when
        the service is not root. A program, not `user=` on the spawn: uvloop refuses that."""
        if self.run_as is None:
            return []
        return [
            "setpriv",
            f"--reuid={self.run_as}",
            f"--regid={self.run_as}",
            "--clear-groups",
            "--no-new-privs",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]

    def time_limit(self, asked: float | None) -> float:
        """The wall-clock limit of a call: the default, or what it asked, up to the maximum."""
        return min(asked or self.limits.timeout_seconds, self.limits.max_timeout_seconds)

    async def run(self, command: str, workspace: Path, limit: float | None = None) -> ShellResult:
        """Run `command` in `workspace` until it ends, or until its time limit (then kill)."""
        reason = self.unavailable()
        if reason is not None:
            raise ShellUnavailable(reason)
        seconds = self.time_limit(limit)
        home = str(workspace) if self.mode == "unsandboxed" else SANDBOX_WORKSPACE
        process = await asyncio.create_subprocess_exec(
            *self.command_line(command, workspace),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            # Empty for the sandbox (bubblewrap is PID 1 inside, its environment shows).
            env={} if self.mode == "sandboxed" else self._environment(home),
            cwd=workspace,
            # A session of its own makes the command the leader of a new process group,
            # which a stop or a time-out kills whole. Not `process_group=` nor `user=`:
            # uvloop, the loop uvicorn serves on, refuses both.
            start_new_session=True,
        )
        assert process.stdout is not None
        output = _Output(self.limits.output_bytes, process.pid)
        reader = asyncio.create_task(output.read(process.stdout))
        timed_out = False
        try:
            async with asyncio.timeout(seconds):
                await process.wait()
        except TimeoutError:
            timed_out = True
        finally:
            kill_group(process.pid)
            await process.wait()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(DRAIN_SECONDS):
                    await asyncio.shield(reader)
            reader.cancel()
        return ShellResult(
            output=output.text(),
            exit_code=None if timed_out else process.returncode,
            timed_out=timed_out,
            cut_bytes=output.cut,
            flooded=output.flooded,
        )

    def _environment(self, home: str) -> dict[str, str]:
        """All a command's environment holds: nothing of the service's."""
        path = [f"{sys.prefix}/bin", "/usr/local/bin", "/usr/bin", "/bin"]
        return {
            "PATH": ":".join(path),
            "HOME": home,
            "LANG": "C.UTF-8",
            "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            "MPLCONFIGDIR": "/tmp",
        }


class ShellUnavailable(Exception):
    pass


def python_mounts() -> list[Mount]:
    """Python and its libraries where they are outside `/usr` (a venv, pyenv), read-only.

    At the same paths, so the interpreter's symlinks and `pyvenv.cfg` hold.
    """
    seen: list[Mount] = []
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, sys.exec_prefix)):
        path = Path(prefix)
        if not path.is_dir() or any(path == Path(s) or Path(s) in path.parents for s in _SYSTEM):
            continue
        seen.append(Mount(path, str(path)))
    return seen


def _system_binds() -> list[str]:
    args: list[str] = []
    for name in _SYSTEM:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def _parent_dirs(mounts: Sequence[Mount]) -> list[str]:
    """Traversable folders above each mount point.

    Made by bubblewrap, they would copy the host's modes, and a venv under
    `/root` would stay out of the unprivileged user's reach.
    """
    made: dict[str, None] = {}
    for mount in mounts:
        for parent in reversed(Path(mount.target).parents):
            if str(parent) != "/" and str(parent) not in _SYSTEM:
                made.setdefault(str(parent))
    args: list[str] = []
    for folder in made:
        args += ["--perms", "0755", "--dir", folder]
    return args


class _Output:
    """The head and the tail of a stream, up to `cap` bytes together; counts the rest.

    A flood (more than `FLOOD_BYTES`) kills the command's process group.
    """

    def __init__(self, cap: int, pid: int) -> None:
        self._half = max(1, cap // 2)
        self._pid = pid
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        self.flooded = False

    async def read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_READ_BYTES):
            self.total += len(chunk)
            if self.total > FLOOD_BYTES and not self.flooded:
                self.flooded = True
                kill_group(self._pid)
            room = self._half - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            self._tail += chunk
            if len(self._tail) > self._half:
                del self._tail[: len(self._tail) - self._half]

    @property
    def cut(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        head = self._head.decode(errors="replace")
        tail = self._tail.decode(errors="replace")
        if not self.cut:
            return head + tail
        return f"{head}\n[... {self.cut} bytes of output cut ...]\n{tail}"


class BashTool:
    """The model's shell: the command's output, and how it ended."""

    def __init__(self, shell: Shell, workspace: Workspace) -> None:
        self._shell = shell
        self._workspace = workspace
        limits = shell.limits
        sandbox = (
            "in a sandbox with no network; the workspace is the current folder (/workspace), "
            "the only place you can write; skill files are read-only under /skills/<name>"
            if shell.mode == "sandboxed"
            else "in the workspace folder"
        )
        self.schema = ToolSchema(
            "bash",
            f"Run a bash command {sandbox}. Python 3 is `python` (with pypdf, python-docx, "
            f"openpyxl where installed). Time limit {limits.timeout_seconds:g} s; pass "
            f"`timeout` (up to {limits.max_timeout_seconds:g} s) for longer work. Output is "
            f"cut beyond {limits.output_bytes} bytes (head and tail kept).",
            {
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "timeout": {"type": "number", "description": "Seconds before it is killed."},
                },
                "required": ["command"],
            },
        )

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        command = str(args.get("command") or "").strip()
        if not command:
            return ToolOutput("A `command` is required.", is_error=True)
        reason = await self._shell.cannot_run()
        if reason is not None:
            return ToolOutput(f"The shell is not available: {reason}.", is_error=True)
        asked = _seconds(args.get("timeout"))
        ctx.emit(ThinkingEvent(f"Running: {_first_line(command)}\n"))
        await asyncio.to_thread(self._workspace.create)
        result = await self._shell.run(command, self._workspace.root, asked)
        text = untrusted(result.output, "command output") if result.output else "(no output)"
        if result.flooded:
            text += f"\n[killed: it printed more than {FLOOD_BYTES} bytes]"
        elif result.timed_out:
            seconds = self._shell.time_limit(asked)
            text += f"\n[killed: still running after {seconds:g} s, with all its processes]"
        elif result.exit_code:
            text += f"\n[exit code {result.exit_code}]"
        failed = result.timed_out or result.flooded or bool(result.exit_code)
        return ToolOutput(text, is_error=failed)


def _first_line(command: str, limit: int = 120) -> str:
    line = command.splitlines()[0]
    return line if len(line) <= limit and "\n" not in command else line[:limit] + " …"


def _seconds(value: Any) -> float | None:
    """A time limit the model asked for, if it is a positive number."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None
