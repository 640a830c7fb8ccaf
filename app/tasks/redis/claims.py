"""Claims in Redis, shared by every instance, and the heartbeat that keeps this instance's.

A claim is one key (`shared`), set with NX and a TTL. Refresh and
release are Lua scripts, so comparing the task id and touching the key are
one atomic step: a run whose claim expired and was retaken must never
extend or delete the new owner's key. A stop is published for the owner's
listener (`redis.py`); a release publishes `done` in the same step as the
delete, so no waiter can see the key gone yet miss the message.

Claims outlive Redis restarts, failovers and their owner's death
(`liveness`): every `dead_after / 5` seconds the heartbeat pushes this
instance's deadline out and then, in one more round trip, pushes out the
deadline and TTL of each claim it holds, or takes it again when Redis lost
it (and this instance's entry with it). A reconnect of the listener beats
at once (`beat_soon`) and takes again whatever claim is missing: a
restarted Redis comes back empty, and a replica promoted by the Sentinels
(or in a Cluster) may lack the last writes of the primary it replaces, so
either has its claims back within two round trips of the reconnect. A
release that failed while Redis was away is sent again by the heartbeat
once Redis answers, so the conversation is not held until the claim's TTL.
A claim whose instance is past its deadline counts as free: a new turn
takes it, a stop finds nothing, the list of runs drops it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from contextlib import suppress
from dataclasses import dataclass

from app.core.run import ConversationKey
from app.tasks.base import Claim, LostClaim, TaskBackendUnavailable, Ticket
from app.tasks.redis.client import RedisPipeline, milliseconds, translate_errors
from app.tasks.redis.liveness import (
    BEAT_LUA,
    CLAIM_LUA,
    HAND_BACK_LUA,
    KEEP_LUA,
    LIVE_CLAIM_LUA,
    RESIGN_LUA,
    RESIGNED_CLAIM_LUA,
    TAKE_OVER_LUA,
)
from app.tasks.redis.shared import RedisTaskSpace, listed, message

logger = logging.getLogger(__name__)

# KEYS[1] claim key; ARGV: task id, new TTL in ms, this instance. 1 when the claim was
# ours (this run's, on this instance: not one another instance took over) and extended.
_REFRESH_LUA = """
local value = redis.call('GET', KEYS[1])
if value then
  local claim = cjson.decode(value)
  if claim['task_id'] == ARGV[1] and claim['instance'] == ARGV[3] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
end
return 0
"""

# KEYS[1] claim key, KEYS[2] the user's list of runs; ARGV: task id, done channel, done
# message, this instance. The turn leaves the list whether or not the claim is still its,
# unless another instance took the run over (it lists it on).
_RELEASE_LUA = """
local value = redis.call('GET', KEYS[1])
if value then
  local claim = cjson.decode(value)
  if claim['task_id'] == ARGV[1] then
    if claim['instance'] ~= ARGV[4] then return 0 end
    redis.call('HDEL', KEYS[2], ARGV[1])
    redis.call('DEL', KEYS[1])
    redis.call('PUBLISH', ARGV[2], ARGV[3])
    return 1
  end
end
redis.call('HDEL', KEYS[2], ARGV[1])
return 0
"""


@dataclass(slots=True)
class _Held:
    """A claim this instance holds, as the heartbeat keeps it (or takes it again)."""

    claim: Claim
    ttl: float
    listed: str = ""
    """The turn as its user's list of runs shows it, once known; put back with the claim."""


class RedisClaims:
    """`dead_after` is how long past its last heartbeat this instance counts as dead to
    the others (`INSTANCE_DEAD_SECONDS`); it beats five times in that span."""

    def __init__(self, space: RedisTaskSpace, dead_after: float) -> None:
        self._space = space
        self._keys = space.keys
        self._where = space.where
        self._dead_after = dead_after
        self._held: dict[ConversationKey, _Held] = {}
        self._beat_now = asyncio.Event()
        """Set to beat before the interval is up: the listener reconnected (Redis came back)."""
        self.first_beat = asyncio.Event()
        self._retake = False
        """Redis lost this instance, and its claims are not all taken again yet."""
        self._unreleased: dict[ConversationKey, Claim] = {}
        """Claims whose release failed while Redis was away: released by the next beat."""
        self._resigned = False
        """This instance drained: it beats no more, and counts as dead."""
        self._unanswered: set[ConversationKey] = set()
        """Conversations whose last take-over here failed to reach Redis: it may have run,
        its claim naming this instance though no run here holds it."""
        self._beating = asyncio.Lock()
        self._lost: LostClaim | None = None

    @property
    def beat_interval(self) -> float:
        return self._dead_after / 5

    @property
    def life(self) -> int:
        """How long past now a claim's holder is alive (its `until`), in milliseconds."""
        return milliseconds(self._dead_after)

    async def claim(self, claim: Claim, ttl: float, ticket: Ticket | None = None) -> bool:
        keys = self._keys
        key, board = keys.claim(claim.user_id, claim.conversation_id), keys.board(claim.user_id)
        value, expiry = keys.claim_value(claim), milliseconds(ttl)
        shown = "" if ticket is None else listed(ticket)
        argv = (key, board, value, expiry, claim.task_id, shown, self.life)
        with translate_errors(self._where):
            taken = bool(
                await self._space.batch.command(lambda pipe: pipe.eval(CLAIM_LUA, 2, *argv))
            )
        if taken:
            self.adopt(claim, ttl, shown)
        return taken

    def adopt(self, claim: Claim, ttl: float, shown: str = "") -> None:
        """Keep `claim` alive from the heartbeat: this instance took it (here or from a queue)."""
        self._held[claim.key] = _Held(claim, ttl, shown)

    def shown(self, ticket: Ticket) -> None:
        """The turn is listed as `ticket` now: the heartbeat lists it so if it takes it again."""
        held = self._held.get(ConversationKey(ticket.user_id, ticket.conversation_id))
        if held is not None and held.claim.task_id == ticket.task_id:
            held.listed = listed(ticket)

    async def refresh(self, claim: Claim, ttl: float) -> bool:
        key = self._keys.claim(claim.user_id, claim.conversation_id)
        expiry, instance = milliseconds(ttl), self._keys.instance_id
        with translate_errors(self._where):
            extended = await self._space.batch.command(
                lambda pipe: pipe.eval(_REFRESH_LUA, 1, key, claim.task_id, expiry, instance)
            )
        return bool(extended)

    async def release(self, claim: Claim) -> None:
        try:
            with translate_errors(self._where):
                await self._space.batch.command(lambda pipe: self.release_in(pipe, claim))
        except TaskBackendUnavailable:
            self._unreleased[claim.key] = claim
            raise

    def release_in(self, pipe: RedisPipeline, claim: Claim) -> None:
        """Queue `release` on `pipe`.

        EVAL, not a registered script: a script object on a pipeline costs a
        SCRIPT EXISTS round trip on every execute.
        """
        self.let_go(claim)
        keys = self._keys
        key, board = keys.claim(claim.user_id, claim.conversation_id), keys.board(claim.user_id)
        done = message(claim.user_id, claim.conversation_id)
        pipe.eval(
            _RELEASE_LUA, 2, key, board, claim.task_id, keys.done_channel, done, keys.instance_id
        )

    def let_go(self, claim: Claim) -> None:
        """Keep the claim alive no more: it is released (here, or by the run log's last
        batch), or the run goes on at another instance."""
        held = self._held.get(claim.key)
        if held is not None and held.claim.task_id == claim.task_id:
            del self._held[claim.key]

    def on_lost(self, lost: LostClaim) -> None:
        """Call `lost` with each claim the heartbeat finds another instance holds now."""
        self._lost = lost

    async def take_over(
        self, user_id: str, conversation_id: str, agent_type: str, dead: str, ttl: float
    ) -> Claim | None:
        """Take the conversation's claim from the `dead` instance for its run (or, when
        nobody holds it, for the conversation's latest run kept); None when that is not
        to be had. The heartbeat keeps it from now on."""
        keys = self._keys
        script_keys = (
            keys.claim(user_id, conversation_id),
            keys.latest_run(user_id, conversation_id),
        )
        # A claim naming this instance that no run here holds, after a take-over whose
        # reply was lost (it ran once Redis answered again), is that take-over's: taken again.
        key = ConversationKey(user_id, conversation_id)
        again = "1" if key in self._unanswered and key not in self._held else "0"
        argv = (dead, agent_type, keys.instance_id, milliseconds(ttl), self.life, again)
        try:
            with translate_errors(self._where):
                task_id = await self._space.batch.command(
                    lambda pipe: pipe.eval(TAKE_OVER_LUA, len(script_keys), *script_keys, *argv)
                )
        except TaskBackendUnavailable:
            self._unanswered.add(key)
            raise
        self._unanswered.discard(key)
        if task_id is None:
            return None
        claim = Claim(user_id, conversation_id, str(task_id), agent_type)
        self.adopt(claim, ttl)
        return claim

    async def hand_back(self, claim: Claim, dead: str) -> None:
        """Give a claim taken over back to the `dead` instance: the take-over met an outage
        past it. Redis away too, the next take-over here takes it again (`_unanswered`)."""
        self.let_go(claim)
        key = self._keys.claim(claim.user_id, claim.conversation_id)
        argv = (claim.task_id, self._keys.instance_id, dead)
        try:
            with translate_errors(self._where):
                await self._space.batch.command(
                    lambda pipe: pipe.eval(HAND_BACK_LUA, 1, key, *argv)
                )
        except TaskBackendUnavailable:
            self._unanswered.add(claim.key)

    async def resign(self) -> None:
        """Beat no more and count as dead from now on: this instance drained and handed its
        running turns over, which the others take over at their next sweep."""
        self._resigned = True
        async with self._beating:  # a beat on its way would make this instance alive again
            keys = self._keys
            held = [held.claim for held in self._held.values()]

            def fill(pipe: RedisPipeline) -> None:
                pipe.eval(RESIGN_LUA, 1, keys.instances, keys.instance_id)
                for claim in held:
                    key = keys.claim(claim.user_id, claim.conversation_id)
                    pipe.eval(RESIGNED_CLAIM_LUA, 1, key, keys.instance_id)

            with translate_errors(self._where):
                for reply in await self._space.batch.execute(fill):
                    if isinstance(reply, Exception):
                        raise reply

    async def current(self, user_id: str, conversation_id: str) -> Claim | None:
        """The claim, unless its instance died: that conversation runs nothing."""
        value = await self._live_claim(user_id, conversation_id)
        if value is None:
            return None
        stored = json.loads(value)
        return Claim(user_id, conversation_id, stored["task_id"], stored["agent_type"])

    async def request_stop(self, user_id: str, conversation_id: str, wait: float) -> bool:
        wakeups = self._space.wakeups
        # Registered before the existence check: a release landing between
        # the check and the wait still wakes this call.
        with wakeups.waiting(wakeups.ended, (user_id, conversation_id)) as ended:
            if await self._live_claim(user_id, conversation_id) is None:
                return False
            with translate_errors(self._where):
                await self._space.redis.publish(
                    self._keys.stop_channel, message(user_id, conversation_id)
                )
            with suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await ended
            return True

    async def _live_claim(self, user_id: str, conversation_id: str) -> str | None:
        key = self._keys.claim(user_id, conversation_id)
        with translate_errors(self._where):
            value = await self._space.batch.command(lambda pipe: pipe.eval(LIVE_CLAIM_LUA, 1, key))
        return None if value is None else str(value)

    def beat_soon(self) -> None:
        """Redis was away: beat now, and take again each held claim it no longer has."""
        self._retake = True
        self._beat_now.set()

    async def heartbeat(self) -> None:
        """Beat every `beat_interval`, or at once when asked; log once per outage."""
        failing = False
        while not self._resigned:
            try:
                async with self._beating:
                    if self._resigned:
                        return
                    await self._beat()
                if failing:
                    logger.info("instance heartbeat reaches Redis at %s again", self._where)
                failing = False
            except TaskBackendUnavailable as exc:
                if not failing:
                    logger.warning(
                        "instance heartbeat cannot reach Redis (%s): past %.0f s without one"
                        " the other instances take this one's conversations",
                        exc,
                        self._dead_after,
                    )
                failing = True
            self.first_beat.set()
            self._beat_now.clear()
            with suppress(TimeoutError):
                async with asyncio.timeout(self.beat_interval):
                    await self._beat_now.wait()

    async def _beat(self) -> None:
        """Push this instance's deadline out, then keep every claim it holds.

        A claim gone while this instance's entry stayed expired (its run stopped
        refreshing it); one gone with the entry was lost by Redis, and is taken
        again. The claims are read when the batch leaves: one released meanwhile
        is not in it, and one released while the batch was on its way and taken
        again is released at once.
        """
        keys, batch = self._keys, self._space.batch
        life = milliseconds(self._dead_after)
        with translate_errors(self._where):
            lost = bool(
                await batch.command(
                    lambda pipe: pipe.eval(BEAT_LUA, 1, keys.instances, keys.instance_id, life)
                )
            )
        self._retake = self._retake or lost
        await self._release_left()
        if not self._held:
            self._retake = False
            return
        kept: list[_Held] = []
        retake = "1" if self._retake else "0"

        def fill(pipe: RedisPipeline) -> None:
            kept.extend(self._held.values())
            for held in kept:
                claim = held.claim
                key = keys.claim(claim.user_id, claim.conversation_id)
                board, value = keys.board(claim.user_id), keys.claim_value(claim)
                expiry = milliseconds(held.ttl)
                pipe.eval(KEEP_LUA, 2, key, board, value, expiry, held.listed, retake, self.life)

        with translate_errors(self._where):
            replies = await batch.execute(fill)
        self._retake = False
        again = 0
        for held, reply in zip(kept, replies, strict=True):
            claim = held.claim
            current = self._held.get(claim.key) is held
            if reply == 2:
                again += 1
                if not current:
                    await self.release(claim)
            elif reply in (0, 3, 4) and current:
                del self._held[claim.key]  # its run's own refresh takes it again if it can
                if reply == 4 and self._lost is not None:
                    self._lost(claim)  # taken over: this instance was only slow, not dead
        if again:
            logger.info(
                "Redis at %s had lost this instance (restarted?): %d claim(s) taken again",
                self._where,
                again,
            )

    async def _release_left(self) -> None:
        """Release the claims whose release failed: their runs ended while Redis was away."""
        if not self._unreleased:
            return
        left = list(self._unreleased.values())

        def fill(pipe: RedisPipeline) -> None:
            for claim in left:
                self.release_in(pipe, claim)

        with translate_errors(self._where):
            await self._space.batch.execute(fill)
        for claim in left:
            if self._unreleased.get(claim.key) is claim:
                del self._unreleased[claim.key]
        logger.info("released %d claim(s) whose runs ended while Redis was away", len(left))
