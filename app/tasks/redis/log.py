"""Run logs copied to Redis Streams, so a run can be resumed, and seen to end, from any instance.

Keys, under the deployment's prefix:

    events:<task_id>            a Stream of batches. An entry holds the frames of
                                consecutive events, one field per event named by
                                its SSE id, and its entry id is `L-0`, L being the
                                last event it holds; the final entry is `L-1` and
                                also holds the field `end`. So XREAD after `n-0`
                                returns exactly the entries holding events after n,
                                and the end. Capped near `max_events` events;
                                expires `retention` seconds after the end (while
                                the run lives, TTL plus that).
    run:<user>:<conversation>   the task id of the conversation's latest run, kept
                                as long, so a finished run is still found.

In a Redis Cluster both name their user as its hash tag (`events:{<user>}:<task_id>`,
`run:{<user>}:<conversation>`, `shared`): a batch's script writes them with
the claim and the list of runs, which a Cluster allows only within one slot.

Every batch is one script (`APPEND_LUA`) that first checks the run still holds its
conversation's claim: a run that another instance took over (this one was only
slow, not dead) is refused, so two instances never both write one log (`ClaimLost`).
The same script releases the claim just before the end marker, on the last batch.
A run carried on by another instance goes on in the same Stream from its last
entry (`RunLog.base`), and a run that moves away (a drain) sends what it has and no
end marker: the instance that carries it on writes the rest.

The run never waits on Redis: `publish` runs beside it, wakes when the
in-process log grows, lingers a moment so a burst of tokens becomes one
batch (unless the log is gated, its readers waiting on the copy), and sends
each batch as one entry in one pipelined round trip (an
entry per event cost a command, an encoding and a reply each: a seventh of
the service's CPU at saturation). If Redis fails it logs once per outage,
backs off, and then sends the whole log again (Redis refuses an entry id it
already has, and readers skip events they have read), so the copy is
complete again once Redis is back, even after a restart that lost it.

A reader on another instance follows the Stream (`log_reader`).

Left out: consumer groups (every reader reads the whole log), and any
durability beyond Redis's own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from redis.exceptions import RedisError
from redis.typing import EncodableT

from app.core.events import RunStatus
from app.tasks.base import BatchRelease, Claim, ClaimLost, Claims, EventsGone, TaskError
from app.tasks.log import RunLog
from app.tasks.redis.batch import SharedPipeline, only_reply
from app.tasks.redis.client import RedisPipeline, connect, milliseconds, translate_errors
from app.tasks.redis.log_reader import END, Entry, RedisStreamReader, entry_id, first_event
from app.tasks.redis.shared import TaskKeys, message
from app.tasks.redis.target import RedisTarget

logger = logging.getLogger(__name__)

_LINGER_SECONDS = 0.02
"""How long the copier waits after a wake-up for more events, so a burst is one round trip.

Not while the log is gated: its readers wait for the copy, so a linger would hold every
event back that long (the first one too: 20 ms more to a first token). There, what comes
while a copy is on its way is the next batch."""
_RETRY_SECONDS = 1.0
"""Pause between copy attempts while Redis is failing."""
_READ_BATCH = 100
"""Entries per XREAD: up to `_ENTRY_EVENTS` events each."""
_ENTRY_EVENTS = 64
"""Most events in one entry, so trimming (whole entries) keeps close to `max_events`."""
_EVENTS, _FINAL = 0, 1
"""The sequence part of an entry id: a batch of events, or the last batch with the end."""

APPEND_LUA = """
-- KEYS: stream, pointer, claim, the user's list of runs. ARGV: task id, instance, done
-- channel, done message, pointer life in ms ('' to leave it), stream life in ms ('' to
-- leave it), retention in ms ('' unless this is the run's last batch), the MINID to trim
-- to, '1' for NOMKSTREAM, '1' to release the claim first; then per entry its id, its field
-- count and its fields and values. 1: copied; 0: the Stream is gone; -1: the claim is
-- another instance's (or another run's) now.
local held = redis.call('GET', KEYS[3])
if held then
  local claim = cjson.decode(held)
  if claim['task_id'] ~= ARGV[1] or claim['instance'] ~= ARGV[2] then return -1 end
end
if ARGV[5] ~= '' then redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[5]) end
if ARGV[10] == '1' then
  redis.call('HDEL', KEYS[4], ARGV[1])
  if held then
    redis.call('DEL', KEYS[3])
    redis.call('PUBLISH', ARGV[3], ARGV[4])
  end
end
local i = 11
while i <= #ARGV do
  local count = tonumber(ARGV[i + 1])
  local command = {'XADD', KEYS[1]}
  if ARGV[9] == '1' then command[#command + 1] = 'NOMKSTREAM' end
  command[#command + 1] = 'MINID'
  command[#command + 1] = '='
  command[#command + 1] = ARGV[8]
  command[#command + 1] = ARGV[i]
  for j = i + 2, i + 1 + 2 * count do command[#command + 1] = ARGV[j] end
  local added = redis.pcall(unpack(command))
  if type(added) == 'table' and added['err'] then
    -- A resend after an outage finds the entries Redis kept: those are done already.
    if not string.find(added['err'], 'equal or smaller') then
      return redis.error_reply(added['err'])
    end
  elseif not added then
    return 0
  end
  i = i + 2 + 2 * count
end
if ARGV[7] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[7])
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[7])
elseif ARGV[6] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
end
return 1
"""

StoredStatus = Callable[[str, str], Awaitable[str | None]]
"""How (user, conversation)'s newest turn is stored: `running`, how it ended, None if no row."""


@dataclass(slots=True)
class _Copy:
    """One round trip of a run's copy, queued; what it took from the log once it left."""

    now: float
    """When it was queued, on the loop's clock."""
    extend: bool
    """Whether it pushes the keys' lives out."""
    frames: list[bytes] = field(default_factory=list)
    ended: bool = False
    replies: asyncio.Future[list[Any]] = field(init=False)


class RedisRunLogs:
    """The `SharedRunLogs` backend on Redis; build it once per app and `close()` it at shutdown.

    `claims` answers whether a run still holds its conversation (its liveness);
    `releaser`, the same claims when they are kept in Redis, lets a run's
    last copy release its claim in the same round trip;
    `max_idle` is the longest a reader blocks on Redis before its response pings;
    `stored` reads how a turn is stored, for a run whose claim is gone with no end marker.
    """

    def __init__(
        self,
        target: RedisTarget | str,
        prefix: str,
        claims: Claims,
        *,
        instance_id: str,
        releaser: BatchRelease | None,
        ttl: float,
        retention: float,
        max_events: int,
        max_idle: float,
        timeout: float = 2.0,
        stored: StoredStatus | None = None,
    ) -> None:
        target = RedisTarget.of(target)
        self._batch = SharedPipeline(target, timeout=timeout, decode=False)
        # Its own pool: a blocked XREAD holds a connection for up to `max_idle`.
        self._reader = connect(
            target, timeout=timeout, read_timeout=max_idle + timeout, decode=False
        )
        self._where = target.where
        self._keys = TaskKeys(prefix, instance_id, target.keys_tagged)
        self._claims = claims
        self._releaser = releaser
        """Told when the last copy released its claim: the Redis claims behind `claims`,
        unwrapped (tracing wraps them), or None where the runner releases its claim on its own."""
        self._live_ms = milliseconds(ttl + retention)
        self._retention_ms = milliseconds(retention)
        self._refresh = max(ttl / 3, 0.05)
        self._max_events = max_events
        self._max_idle = max_idle
        self._stored = stored

    async def close(self) -> None:
        await self._batch.close()
        await self._reader.aclose()

    async def publish(self, claim: Claim, log: RunLog) -> bool:
        stream = self._keys.events(claim.user_id, claim.task_id)
        pointer = self._pointer_key(claim.user_id, claim.conversation_id)
        cursor = log.base
        failing = False
        expires_at = 0.0
        """When the Stream's TTL was last pushed out, on the loop's clock."""
        loop = asyncio.get_running_loop()
        due: _Copy | None = None
        """A copy a gated event queued the moment it was appended (`RunLog.on_gated_append`)."""

        def copy() -> _Copy:
            now = loop.time()
            extend = cursor == log.base or now - expires_at >= self._refresh
            return self._copy(stream, pointer, claim, cursor, log, now, extend)

        def queue_at_once() -> None:
            nonlocal due
            if due is None:
                due = copy()

        while True:
            if due is None:
                log.on_gated_append = queue_at_once
                try:
                    await log.ready(cursor, self._refresh, held=True)
                except asyncio.CancelledError:
                    if due is not None:
                        # Stopped as an event queued its copy: its outcome is nobody's now,
                        # and a failure left unread would be logged as an error by asyncio.
                        due.replies.cancel()
                    raise
                finally:
                    log.on_gated_append = None
            if due is None:
                if not log.ending and not log.gated and cursor < log.last_id:
                    await asyncio.sleep(_LINGER_SECONDS)
                due = copy()
            sent, due = due, None
            try:
                kept = int(only_reply(await sent.replies))
            except (RedisError, OSError) as exc:
                if not failing:
                    logger.warning(
                        "cannot copy run %s to Redis at %s (%s): until Redis is back it can"
                        " be resumed only on this instance",
                        claim.task_id,
                        self._where,
                        type(exc).__name__,
                    )
                failing = True
                log.ungate()  # the stream goes on here rather than wait for Redis
                if sent.ended:
                    return False
                cursor = log.base
                await asyncio.sleep(_RETRY_SECONDS)
                continue
            if failing:
                logger.info("run %s is copied to Redis again", claim.task_id)
                failing = False
            if kept < 0:
                raise ClaimLost(f"run {claim.task_id}'s conversation is another instance's now")
            if not kept and log.base:
                logger.warning(
                    "Redis lost the copy of run %s, carried on from another instance: it can"
                    " be resumed only on this instance",
                    claim.task_id,
                )
                log.ungate()
                return False
            if not kept:
                logger.info(
                    "Redis lost the copy of run %s (restarted?): copying it again", claim.task_id
                )
                cursor = 0
                continue
            if sent.extend:
                expires_at = sent.now
            cursor += len(sent.frames)
            log.copied(cursor)
            if sent.ended:
                return self._releaser is not None and not log.handed_over

    async def latest(self, user_id: str, conversation_id: str) -> str | None:
        claim = await self._claims.current(user_id, conversation_id)
        if claim is not None:
            return claim.task_id
        with translate_errors(self._where):
            pointer = self._pointer_key(user_id, conversation_id)
            value = await self._batch.command(lambda pipe: pipe.get(pointer))
        return None if value is None else cast(bytes, value).decode()

    async def reader(
        self, user_id: str, conversation_id: str, task_id: str, after: int
    ) -> RedisStreamReader | None:
        stream = self._keys.events(user_id, task_id)
        with translate_errors(self._where):
            # Queued together, so they leave in one batch: one round trip.
            head, tail = cast(
                list[list[Entry]],
                await asyncio.gather(
                    self._batch.command(lambda pipe: pipe.xrange(stream, count=1)),
                    self._batch.command(lambda pipe: pipe.xrevrange(stream, count=1)),
                ),
            )
        reader = RedisStreamReader(self, stream, (user_id, conversation_id, task_id))
        if not head:
            running = await self.is_running(user_id, conversation_id, task_id)
            return reader if running else None
        first_kept = first_event(head[0])
        if first_kept > after + 1:
            raise EventsGone(
                f"events {after + 1} to {first_kept - 1} of this run are no longer kept"
            )
        number, kind = entry_id(tail[0][0])
        if kind == _FINAL and after >= number:
            reader.end()  # asked from its end, or beyond: nothing more will come
        return reader

    async def last_event_id(self, user_id: str, task_id: str) -> int | None:
        stream = self._keys.events(user_id, task_id)
        with translate_errors(self._where):
            tail = cast(
                list[Entry],
                await self._batch.command(lambda pipe: pipe.xrevrange(stream, count=1)),
            )
        return entry_id(tail[0][0])[0] if tail else None

    async def history(self, user_id: str, task_id: str) -> list[bytes] | None:
        stream = self._keys.events(user_id, task_id)
        with translate_errors(self._where):
            entries = cast(list[Entry], await self._batch.command(lambda pipe: pipe.xrange(stream)))
        frames: list[bytes] = []
        for _, fields in entries:
            for name, frame in fields.items():
                if name == END:
                    return None  # it ended: nothing to carry on
                number = int(name)
                if number <= len(frames):
                    continue  # a batch sent again after an outage
                if number != len(frames) + 1:
                    return None  # its start is trimmed: nothing whole to carry on from
                frames.append(frame)
        return frames

    async def is_running(self, user_id: str, conversation_id: str, task_id: str) -> bool:
        """Whether the run still holds its conversation (raises `TaskError` if Redis fails)."""
        claim = await self._claims.current(user_id, conversation_id)
        return claim is not None and claim.task_id == task_id

    async def settled(self, user_id: str, conversation_id: str, task_id: str) -> RunStatus | None:
        """How a run that let go of its claim without an end marker ended; None: not yet.

        The conversation's newest row is the run's while no newer run has taken
        the conversation; once one has, the run's own row is no longer known here.
        Raises `TaskError` when the store cannot tell (the stream then ends without `complete`).
        """
        if self._stored is None or await self.latest(user_id, conversation_id) not in (
            None,
            task_id,
        ):
            return "interrupted"
        try:
            status = await self._stored(user_id, conversation_id)
        except Exception as exc:
            raise TaskError(f"the stored turn cannot be read: {type(exc).__name__}") from exc
        if status == "running":
            return None
        return cast(RunStatus, status or "interrupted")

    async def entries_after(self, stream: str, after: int, block: float) -> list[Entry]:
        """The entries after event `after`, waiting up to `block` seconds for the first one."""
        block_ms = milliseconds(min(block, self._max_idle))
        reply = cast(
            list[tuple[bytes, list[Entry]]],
            await self._reader.xread({stream: f"{after}-0"}, count=_READ_BATCH, block=block_ms),
        )
        return [entry for _, entries in reply for entry in entries]

    def _copy(
        self,
        stream: str,
        pointer: str,
        claim: Claim,
        cursor: int,
        log: RunLog,
        now: float,
        extend: bool,
    ) -> _Copy:
        """One round trip, queued: the new frames, the end marker once ended, the keys' lives.

        The frames are taken when the batch leaves, so those appended meanwhile go too.
        The run's last batch also releases the claim, just before the end marker, as
        the runner would have a moment earlier in a round trip of its own; a run handed
        over to another instance writes no end marker and keeps its claim for it.
        Its reply is 0 when the Stream was gone (Redis restarted empty): a copy that goes
        on from `cursor` never creates it, or a resume would find its start missing; -1
        when the claim is another instance's now: nothing was written.
        """
        sent = _Copy(now, extend)
        keys = self._keys
        board = keys.board(claim.user_id)
        claim_key = keys.claim(claim.user_id, claim.conversation_id)
        script_keys = (stream, pointer, claim_key, board)

        def fill(pipe: RedisPipeline) -> None:
            sent.ended = log.ending
            sent.frames = frames = log.frames_after(cursor)
            final = log.ending and not log.handed_over
            # Trimming by id, not length: entries hold different numbers of events.
            oldest = max(0, cursor + len(frames) - self._max_events + 1)
            chunks = [frames[i : i + _ENTRY_EVENTS] for i in range(0, len(frames), _ENTRY_EVENTS)]
            if final and not chunks:
                chunks = [[]]  # the end marker alone
            release = final and self._releaser is not None
            args: list[EncodableT] = [
                claim.task_id,
                keys.instance_id,
                keys.done_channel,
                message(claim.user_id, claim.conversation_id),
                self._live_ms if cursor == log.base else "",
                self._live_ms if extend and not final else "",
                self._retention_ms if final else "",
                oldest,
                "1" if cursor > 0 else "0",
                "1" if release else "0",
            ]
            first = cursor + 1
            for index, chunk in enumerate(chunks, 1):
                last = first + len(chunk) - 1
                is_final = final and index == len(chunks)
                fields: list[EncodableT] = []
                for number, frame in enumerate(chunk, first):
                    fields += [str(number).encode(), frame]
                if is_final:
                    fields += [END, b""]
                args += [f"{last}-{_FINAL if is_final else _EVENTS}", len(fields) // 2, *fields]
                first = last + 1
            if release and self._releaser is not None:
                self._releaser.let_go(claim)
            pipe.eval(APPEND_LUA, len(script_keys), *script_keys, *args)

        def show(replies: list[object]) -> None:
            # Readers wake as the reply is read, not a pass later when the copier resumes.
            if replies[0] == 1:
                log.copied(cursor + len(sent.frames))

        sent.replies = self._batch.queue(fill, show)
        return sent

    def _pointer_key(self, user_id: str, conversation_id: str) -> str:
        return self._keys.latest_run(user_id, conversation_id)
