"""The `bash` tool's sandbox attacked from inside: nothing of the service leaks or outlives a call.

Each test runs real commands in real bubblewrap (`scripts/install-sandbox`
installs it); without it they skip and say why, and fail under CI=true.
Processes are looked for in `/proc` by a marker in their command line.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agents.skills_agent import build
from app.core.events import Event
from app.tools.base import ToolContext
from app.tools.shell import BashTool, Shell, ShellLimits
from app.tools.workspace import Workspace
from tests.integration.service import service_settings
from tests.support.agents import agent_core
from tests.support.sandbox import marked, sandboxed_shell
from tests.support.scripted_model import ScriptedModel

SECRET = "sk-live-do-not-leak-4f1c"
LIMITS = ShellLimits(
    timeout_seconds=10,
    max_timeout_seconds=20,
    output_bytes=4000,
    memory_bytes=512 * 1024 * 1024,
    processes=64,
    file_bytes=10 * 1024 * 1024,
)


@pytest.fixture
def shell() -> Shell:
    return sandboxed_shell(LIMITS)


@pytest.fixture
def workspace(tmp_path: Path, shell: Shell) -> Workspace:
    space = Workspace(tmp_path / "data" / "ws", LIMITS.file_bytes, owner=shell.run_as)
    space.create()
    return space


def sleeper(marker: str) -> str:
    """A background `sleep 1000` named `marker`, so it can be found from outside."""
    return f"(exec -a {marker} sleep 1000) &"


async def test_nothing_of_the_services_environment_is_visible(
    shell: Shell, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DODO_TEST_API_KEY", SECRET)
    monkeypatch.setenv("DATABASE_URL", f"postgresql://app:{SECRET}@db/app")

    result = await shell.run(
        "env; cat /proc/self/environ; cat /proc/1/environ; tr '\\0' '\\n' </proc/$PPID/environ",
        workspace.root,
    )

    assert "PATH=" in result.output
    assert SECRET not in result.output
    assert "DATABASE_URL" not in result.output
    assert "DODO_TEST_API_KEY" not in result.output


async def test_only_the_workspace_is_reachable_and_only_it_is_writable(
    shell: Shell, workspace: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "data" / "other-conversation"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)

    result = await shell.run(
        f"cat ../other-conversation/secret.txt {outside}/secret.txt; ls {tmp_path};"
        " ls /root /home; touch /usr/pwned /etc/pwned ../pwned; echo made > mine.txt; ls",
        workspace.root,
    )

    assert SECRET not in result.output
    assert "No such file or directory" in result.output
    assert "Read-only file system" in result.output
    assert not (tmp_path / "data" / "pwned").exists()
    assert (workspace.root / "mine.txt").read_text() == "made\n"


async def test_a_connection_to_a_local_server_fails(shell: Shell, workspace: Workspace) -> None:
    connections: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append("connected")
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        result = await shell.run(
            "python -c \"import socket; socket.create_connection(('127.0.0.1', "
            f"{port}), 2); print('CONNECTED')\"",
            workspace.root,
        )

    assert "CONNECTED" not in result.output
    assert "ConnectionRefusedError" in result.output
    assert connections == []


async def test_a_fork_bomb_is_contained_and_the_machine_still_works(
    shell: Shell, workspace: Workspace
) -> None:
    started = time.monotonic()
    bomb = await shell.run("bomb() { bomb | bomb & }; bomb; sleep 2", workspace.root, 5)
    after = await shell.run("echo still here", workspace.root)

    assert time.monotonic() - started < LIMITS.max_timeout_seconds
    assert "Resource temporarily unavailable" in bomb.output
    assert after.output == "still here\n"


async def test_endless_output_is_cut_to_its_head_and_tail_and_killed(
    shell: Shell, workspace: Workspace
) -> None:
    result = await shell.run("echo first; yes", workspace.root, 5)

    assert result.flooded or result.timed_out
    assert result.output.startswith("first\ny\n")
    assert "bytes of output cut" in result.output
    assert len(result.output) < LIMITS.output_bytes + 100
    assert result.cut_bytes > 0


async def test_a_command_past_its_time_limit_is_killed_with_its_children(
    shell: Shell, workspace: Workspace
) -> None:
    marker = f"dodo-timeout-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()

    result = await shell.run(f"{sleeper(marker)} sleep 1000", workspace.root, 1)

    assert result.timed_out
    assert time.monotonic() - started < 5
    assert marked(marker) == []


async def test_a_background_child_is_gone_when_the_call_returns(
    shell: Shell, workspace: Workspace
) -> None:
    marker = f"dodo-bg-{uuid.uuid4().hex[:8]}"

    result = await shell.run(f"{sleeper(marker)} echo started", workspace.root)

    assert result.output == "started\n"
    assert result.exit_code == 0
    assert marked(marker) == []


async def test_a_write_beyond_the_file_size_limit_fails(shell: Shell, workspace: Workspace) -> None:
    result = await shell.run("head -c 100000000 /dev/zero > big.bin; echo exit=$?", workspace.root)

    assert "File size limit exceeded" in result.output
    assert (workspace.root / "big.bin").stat().st_size <= LIMITS.file_bytes


async def test_memory_beyond_the_limit_cannot_be_had(shell: Shell, workspace: Workspace) -> None:
    result = await shell.run("python -c 'bytearray(1024 ** 3)'", workspace.root)

    assert "MemoryError" in result.output
    assert result.exit_code == 1


async def test_tmp_is_writable_but_no_larger_than_one_file_may_be(
    shell: Shell, workspace: Workspace
) -> None:
    result = await shell.run(
        "echo scratch > /tmp/a && cat /tmp/a;"
        " for i in 1 2; do head -c 6000000 /dev/zero > /tmp/big$i; done",
        workspace.root,
    )

    assert result.output.startswith("scratch\n")
    assert "No space left on device" in result.output


@pytest.fixture
async def running(
    shell: Shell, workspace: Workspace
) -> AsyncIterator[tuple[str, asyncio.Task[object]]]:
    """A command with a background child, once that runs (it says so through a named pipe)."""
    marker = f"dodo-stop-{uuid.uuid4().hex[:8]}"
    fifo = workspace.root / "started"
    os.mkfifo(fifo)
    workspace.give(fifo)
    task: asyncio.Task[object] = asyncio.create_task(
        shell.run(
            "python -c \"open('started', 'w').write('1'); import time; time.sleep(1000)\""
            f" {marker} & sleep 1000",
            workspace.root,
            20,
        )
    )
    started = asyncio.ensure_future(asyncio.to_thread(fifo.read_text))
    await asyncio.wait([started, task], return_when=asyncio.FIRST_COMPLETED)
    if not started.done():
        # The command ended without starting its child: let the blocked read go, and say why.
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        await started
        pytest.fail(f"the command ended before it started its child: {task.result()}")
    yield marker, task
    task.cancel()


async def test_a_stop_kills_the_whole_command_within_a_second(
    running: tuple[str, asyncio.Task[object]],
) -> None:
    marker, task = running
    assert marked(marker), "the command never started"

    stopped = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert time.monotonic() - stopped < 1.0
    assert marked(marker) == []


async def test_without_the_sandbox_the_tool_refuses_and_runs_nothing(
    workspace: Workspace,
) -> None:
    events: list[Event] = []
    shell = Shell(LIMITS, "sandboxed", (), bwrap=None)
    tool = BashTool(shell, workspace)

    out = await tool({"command": "touch ran.txt"}, ToolContext("u", "c", events.append))

    assert out.is_error
    assert "bubblewrap" in out.text
    assert not (workspace.root / "ran.txt").exists()


async def test_a_sandbox_that_cannot_start_is_a_clear_error_and_runs_nothing(
    workspace: Workspace, tmp_path: Path
) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    events: list[Event] = []
    tool = BashTool(Shell(LIMITS, "sandboxed", (), str(broken)), workspace)

    out = await tool({"command": "touch ran.txt"}, ToolContext("u", "c", events.append))

    assert out.is_error
    assert out.text == (
        "The shell is not available: the sandbox could not start here"
        " (bwrap: No permissions to create new namespace)."
    )
    assert not (workspace.root / "ran.txt").exists()
    assert events == []


async def test_the_tool_reports_the_exit_code_and_the_time_limit(
    shell: Shell, workspace: Workspace
) -> None:
    events: list[Event] = []
    tool = BashTool(shell, workspace)
    ctx = ToolContext("u", "c", events.append)

    failed = await tool({"command": "echo oops >&2; exit 3"}, ctx)
    slow = await tool({"command": "sleep 30", "timeout": 1}, ctx)

    assert failed.is_error
    # What a command prints reaches the model marked as data (app/tools/untrusted.py).
    assert failed.text == (
        '<untrusted-content source="command output">\noops\n\n</untrusted-content>\n[exit code 3]'
    )
    assert slow.is_error
    assert "[killed: still running after 1 s" in slow.text
    assert [getattr(e, "content", "") for e in events] == [
        "Running: echo oops >&2; exit 3\n",
        "Running: sleep 30\n",
    ]


async def test_unsandboxed_is_explicit_warned_and_still_gets_an_empty_environment(
    tmp_path: Path,
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("DODO_TEST_API_KEY", SECRET)
    settings = service_settings(tmp_path, sqlite_url, skills_shell="unsandboxed")
    async with agent_core(settings, ScriptedModel()) as core:
        with caplog.at_level(logging.WARNING, logger="app.agents.skills_agent"):
            agent = build(core, settings)
    workspace = Workspace(tmp_path / "ws", LIMITS.file_bytes, owner=agent.shell.run_as)
    workspace.create()

    result = await agent.shell.run("env", workspace.root)

    assert "runs WITHOUT a sandbox" in caplog.text
    assert "PATH=" in result.output
    assert SECRET not in result.output
