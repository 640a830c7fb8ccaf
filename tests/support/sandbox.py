"""A real bubblewrap shell for tests; without `bwrap` the test skips (fails under CI=true)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from app.tools.shell import Mount, Shell, ShellLimits, python_mounts
from tests.conftest import require_binary


def sandboxed_shell(limits: ShellLimits, mounts: Sequence[Mount] = ()) -> Shell:
    require_binary("bwrap", "bubblewrap (Debian's `bubblewrap`, scripts/install-sandbox)")
    return Shell(limits, "sandboxed", [*python_mounts(), *mounts], shutil.which("bwrap"))


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
