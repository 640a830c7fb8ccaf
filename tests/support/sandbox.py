"""A real bubblewrap shell for tests.

Without `bwrap`, or where it cannot make its namespaces (a container without
user namespaces), the test skips and says why; under CI=true that fails.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from app.tools.shell import Mount, Shell, ShellLimits, python_mounts
from tests.conftest import require_binary, unavailable


def sandboxed_shell(limits: ShellLimits, mounts: Sequence[Mount] = ()) -> Shell:
    require_binary("bwrap", "bubblewrap (Debian's `bubblewrap`, scripts/install-sandbox)")
    failure = _cannot_start()
    if failure:
        unavailable(f"bubblewrap cannot start a sandbox on this machine: {failure}")
    return Shell(limits, "sandboxed", [*python_mounts(), *mounts], shutil.which("bwrap"))


@functools.cache
def _cannot_start() -> str:
    """What bubblewrap said when it could not run `true`; empty when it could (asked once)."""
    shell = Shell(ShellLimits.defaults(), "sandboxed", python_mounts(), shutil.which("bwrap"))
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o777)
        done = subprocess.run(
            shell.command_line("true", Path(folder)), env={}, capture_output=True, timeout=30
        )
    return "" if done.returncode == 0 else done.stderr.decode(errors="replace").strip()


def marked(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (ours: this test's own text is not there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
