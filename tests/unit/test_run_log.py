"""The run log: ids, replay after an id, waking readers, and the end of the log."""

from __future__ import annotations

import asyncio

from app.core.events import TextEvent
from app.tasks.log import RunLog


async def test_a_reader_gets_what_it_missed_in_one_batch_then_waits() -> None:
    log = RunLog()
    assert log.append(TextEvent("a")) == 1
    assert log.append(TextEvent("b")) == 2
    data, cursor = await log.wait(0, idle=5)
    assert cursor == 2
    assert data.count(b"data: ") == 2
    assert data.startswith(b"id: 1\n")

    reader = asyncio.create_task(log.wait(cursor, idle=5))
    await asyncio.sleep(0)
    assert not reader.done()
    log.append(TextEvent("c"))
    data, cursor = await reader
    assert data.startswith(b"id: 3\n")
    assert cursor == 3


async def test_replay_after_an_id_skips_what_was_seen() -> None:
    log = RunLog()
    for word in "abcde":
        log.append(TextEvent(word))
    data, _ = await log.wait(3, idle=5)
    assert data.startswith(b"id: 4\n")
    assert b'"d"' in data
    assert b'"e"' in data
    assert b'"c"' not in data


async def test_an_idle_wait_returns_nothing_so_the_caller_can_ping() -> None:
    log = RunLog()
    data, cursor = await log.wait(0, idle=0.01)
    assert (data, cursor) == (b"", 0)
    assert not log.finished(cursor)


async def test_closing_wakes_readers_and_marks_the_end() -> None:
    log = RunLog()
    reader = asyncio.create_task(log.wait(0, idle=5))
    await asyncio.sleep(0)
    log.close()
    data, cursor = await reader
    assert data == b""
    assert log.finished(cursor)


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
