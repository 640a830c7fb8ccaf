"""The app a serving process runs for its life: `uvicorn app.main:app` (scripts/run, the
Dockerfile, the benchmarks) imports this module, which builds it (`serve`).

Importing it is serving: the app is built from the environment's settings and the
process tuned for it. Tests and tools that build apps of their own import
`app.factory.create_app` instead, and leave their process as it is.
"""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI

_SWITCH_INTERVAL_SECONDS = 0.0005
"""How long the served process's busy thread keeps the GIL from one that asks for it."""
_MIDDLE_COLLECTIONS_PER_FULL = 100
"""Collections of the middle generation between full ones; CPython's default is 10."""


def serve() -> FastAPI:
    """The app built from the settings, in a process tuned to serve it for its life."""
    # What the factory's imports make (modules, classes, routes: ~200,000 objects) lives
    # as long as the process, so collecting during them is waste: three full collections
    # and dozens of others, 130 ms of a 0.9 s import.
    collecting = gc.isenabled()
    gc.disable()
    try:
        from app.factory import create_app  # here, not at the top: collection is paused
    finally:
        if collecting:
            gc.enable()
    served = create_app()
    tune_for_serving()
    return served


def tune_for_serving() -> None:
    """Garbage collection and thread switching for a process that only serves this app."""
    # This process serves this app for its life: what is alive now (modules,
    # routes, models; ~125k objects) never dies, so full collections skip it.
    # Without this each one walked it: 115 ms pauses in every open stream.
    gc.freeze()
    # A full collection walks every object alive, and pauses every open stream
    # while it does: ~1 µs an object, 110 to 220 ms with 1,000 streams open
    # (~200 objects each). The heap growing by a quarter triggered one after
    # another as those streams opened, five in 15 s. Waiting for 100 middle
    # generation collections rather than 10 left none in that burst (bench/README.md);
    # most garbage here is freed by reference counts, not by collections.
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, _MIDDLE_COLLECTIONS_PER_FULL)
    # The event loop rarely waits, so a thread that needs the GIL (each
    # aiosqlite statement takes several turns on its thread) waited the full
    # 5 ms switch interval every time: with 1,000 streams on SQLite that held
    # statements over 30 s in the pool and failed turns. 0.5 ms fixed it
    # (bench/README.md); with no such threads running it changes nothing.
    sys.setswitchinterval(_SWITCH_INTERVAL_SECONDS)


app = serve()
