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


async def test_a_gated_log_shows_readers_only_what_is_copied_out() -> None:
    log = RunLog()
    log.gate()
    for word in ("a", "b", "c"):
        log.append(TextEvent(word))
    reader = asyncio.create_task(log.wait(0, idle=5))
    await asyncio.sleep(0)
    assert not reader.done()  # appended, not copied: a reader waits

    log.copied(2)
    shown, cursor = await reader
    durable = asyncio.create_task(log.durable(idle=5))
    await asyncio.sleep(0)
    assert not durable.done()  # the third is not copied yet
    log.copied(3)
    await durable

    assert (shown.count(b"id: "), cursor) == (2, 2)
    assert log.read(2).startswith(b"id: 3\n")


async def test_a_gated_log_shows_everything_once_the_copy_fails() -> None:
    log = RunLog()
    log.gate()
    log.append(TextEvent("a"))
    log.ungate()
    log.append(TextEvent("b"))
    await log.durable(idle=5)  # nothing is waited for while the copy is down

    assert log.read(0).count(b"id: ") == 2


async def test_a_carried_on_log_numbers_on_from_its_base() -> None:
    log = RunLog(base=41)
    log.append(TextEvent("x"))

    assert log.last_id == 42
    assert log.read(41).startswith(b"id: 42\n")
    assert [f.split(b"\n", 1)[0] for f in log.frames_after(41)] == [b"id: 42"]


async def test_a_run_handed_over_ends_without_a_final_event() -> None:
    log = RunLog()
    log.gate()
    log.append(TextEvent("a"))
    log.append(TextEvent("b"))
    log.hand_over()
    await log.ready(2, idle=5, held=True)  # the copier wakes for the end
    log.copied(2)
    log.close()

    assert log.handed_over
    assert log.finished(2)
    assert log.read(0).count(b"id: ") == 2


async def test_a_run_lost_to_another_instance_never_shows_what_was_not_copied() -> None:
    log = RunLog()
    log.gate()
    log.append(TextEvent("a"))
    log.append(TextEvent("b"))
    log.copied(1)
    log.close(show_rest=False)

    assert log.read(0).count(b"id: ") == 1
    assert log.finished(1)
