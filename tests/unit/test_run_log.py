"""The run log's writer side: what the copier to Redis reads.

How readers see a log (ids, replay after an id, waking, the end) is the
contract in tests/integration/test_event_log_contract.py, run against this
log and the Redis copy alike.
"""

from __future__ import annotations

import asyncio

from app.core.events import TextEvent
from app.tasks.log import RunLog


async def test_a_copier_gets_one_frame_per_event_and_is_woken_by_appends() -> None:
    log = RunLog()
    log.append(TextEvent("a"))
    await log.ready(0, idle=5)  # something is there: no wait
    copier = asyncio.create_task(log.ready(1, idle=5))
    await asyncio.sleep(0)
    assert not copier.done()
    log.append(TextEvent("b"))
    await copier

    frames = log.frames_after(0)
    assert [f.split(b"\n", 1)[0] for f in frames] == [b"id: 1", b"id: 2"]
    assert b"".join(frames) == log.read(0)
