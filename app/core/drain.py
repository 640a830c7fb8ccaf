"""Whether this instance drains: one flag and one moment, read by whatever must act on them.

An instance drains when it is told to go (SIGTERM, on a deploy or a scale-in):
from `begin` it is not ready (`/ready` 503) and takes no new turn (503
`DRAINING`) nor another instance's; at `end` its open streams end, so their
clients resume on another instance, and the process may exit. What happens in
between (the running turns' grace, their hand-over) is `app/service/draining.py`'s.
"""

from __future__ import annotations

import asyncio


class Drain:
    def __init__(self) -> None:
        self.draining = False
        self._ended = asyncio.Event()

    def begin(self) -> None:
        self.draining = True

    def end(self) -> None:
        self.draining = True
        self._ended.set()

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    async def wait_ended(self) -> None:
        await self._ended.wait()
