"""What every benchmark process shares: the event loop, file limits, and reading /proc.

The benchmark runs each part in its own process, so the figures of one never
include another's work; this module holds the few helpers they all need.
Linux only (it reads `/proc`), like the machine the figures are for.
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def fast_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` on uvloop (what uvicorn picks for the service), else on asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def raise_open_files_limit() -> None:
    """A thousand streams need a few thousand sockets across the processes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True, slots=True)
class ProcStat:
    cpu_seconds: float
    """User plus system time the process has used so far."""
    rss_bytes: int


def proc_stat(pid: int) -> ProcStat:
    with open(f"/proc/{pid}/stat", "rb") as f:
        # The command name may hold spaces: the fields we want follow its closing ")".
        fields = f.read().rsplit(b")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    rss_pages = int(fields[21])
    return ProcStat((utime + stime) / _CLOCK_TICKS, rss_pages * _PAGE_BYTES)
