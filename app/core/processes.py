"""Ending a child process and everything it started.

A child started with `start_new_session=True` leads a process group of its
own, which the programs it starts inherit (LibreOffice's `soffice` starts
`oosplash`, which starts `soffice.bin`): killing the group ends them all,
where killing the child alone leaves the rest running, holding memory and
files. (`process_group=` would do the same, but uvloop's subprocesses do
not take it.)
"""

from __future__ import annotations

import contextlib
import os
import signal


def kill_group(pid: int) -> None:
    """SIGKILL every process of the group `pid` leads; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
