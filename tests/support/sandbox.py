"""A real bubblewrap shell for tests; without `bwrap` the test skips (fails under CI=true)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from app.tools.shell import Mount, Shell, ShellLimits, python_mounts
from tests.conftest import require_binary


def sandboxed_shell(limits: ShellLimits, mounts: Sequence[Mount] = ()) -> Shell:
    require_binary("bwrap", "bubblewrap (Debian's `bubblewrap`, scripts/install-sandbox)")
    return Shell(limits, "sandboxed", [*python_mounts(), *mounts], shutil.which("bwrap"))
