"""Carrying on here the turns another instance could not finish: it died, or drained.

The dead-instance sweep (app/tasks/sweeper.py) hands each dead instance to
`TurnSuccessor.carry_on`, which takes over every running turn of it that can
go on, one at a time, in two steps that each let only one instance through:

1. the conversation's claim, in Redis (`TakeOvers.take_over`): it still names
   the dead instance (or nobody), and now names this one; the run keeps its
   task id. From here the dead instance, were it only slow, can write neither
   the run's log (each copy checks the claim) nor its row;
2. the row, in the database (`TurnStore.take_over`): still `running` on the
   dead instance at the same move count, now this instance's, one move more.

Then the run's log is read back from Redis (`SharedRunLogs.history`: the
text, the tool calls, the plan, as far as they were copied out) and the turn
is launched again under its own task id, its log going on from the last
event id (`RunLog.base`), so a client resuming anywhere with its
`Last-Event-ID` misses nothing and sees nothing twice. The agent goes on from
there (`Turn.carried`; app/agents/base.py says how each kind does), in the
conversation's project and with its request's memory setting (`CarryOn`), as
it began.

A turn is not carried on, and ends `interrupted` as before, when it moved
`TURN_TAKEOVERS` times already, its agent does not carry on (or is not run
here), it was a decision on a paused turn (its earlier part is in no log),
or its log is not kept whole. A draining instance carries nothing on. A turn
whose takeover met Redis or the database unavailable is neither: its claim,
if taken already, goes back to the dead instance (`TakeOvers.hand_back`), and
the turn is left to the next sweep (`Succession.postponed`), which tries it
again.
"""

from __future__ import annotations

import logging

from app.agents.on_demand import OnDemandAgents
from app.agents.turn import Carried, InProject, Turn
from app.core.drain import Drain
from app.core.frames import decode_frames
from app.core.run import ConversationKey
from app.llm.model_entry import DEFAULT_MODEL_ID
from app.llm.models import ModelCatalog
from app.service.projects import ProjectService
from app.service.turns import TurnService
from app.store.base import StoreError, StoreUnavailable, TurnStore
from app.store.models import StoredTurn
from app.tasks.base import Claim, Claims, TakeOvers, TaskBackendUnavailable, TaskError
from app.tasks.log import RunLog, SharedRunLogs
from app.tasks.runs import Run
from app.tasks.sweeper import Outage, Succession
from app.tasks.webhooks import Webhooks

log = logging.getLogger(__name__)


class TurnSuccessor:
    """The sweeper's `Successor`: built once in the lifespan, with the parts a turn runs on."""

    def __init__(
        self,
        agents: OnDemandAgents,
        *,
        store: TurnStore,
        claims: Claims,
        takeovers: TakeOvers,
        logs: SharedRunLogs,
        turns: TurnService,
        projects: ProjectService,
        models: ModelCatalog,
        webhooks: Webhooks,
        drain: Drain,
        ttl: float,
        limit: int,
        memory_turns: int,
    ) -> None:
        self._agents = agents
        self._store = store
        self._claims = claims
        self._takeovers = takeovers
        self._logs = logs
        self._turns = turns
        self._projects = projects
        self._models = models
        self._webhooks = webhooks
        self._drain = drain
        self._ttl = ttl
        self._limit = limit
        self._memory_turns = memory_turns

    async def carry_on(self, instance: str) -> Succession:
        """Take over the dead `instance`'s running turns that can go on.

        The others stay as they are, for the sweep to mark `interrupted`; but those
        whose takeover met an outage, which the sweep leaves to its next round: the
        outage is reported once, by the sweep, however many turns it stopped.
        """
        if self._drain.draining or self._limit <= 0:
            return Succession(0)
        carried = 0
        postponed: set[int] = set()
        outage: Outage | None = None
        for row in await self._store.running_turns(instance):
            try:
                carried += await self._carry(instance, row)
            except (TaskBackendUnavailable, StoreUnavailable) as exc:
                if row.id is not None:
                    postponed.add(row.id)
                outage = outage or exc
            except (TaskError, StoreError) as exc:
                log.warning("could not take over turn %s of %s: %s", row.id, instance, exc)
        return Succession(carried, frozenset(postponed), outage)

    async def _carry(self, dead: str, row: StoredTurn) -> bool:
        if row.id is None or row.takeovers >= self._limit or row.pending:
            return False
        try:
            agent = await self._agents.get(row.agent_type)
        except Exception:  # whatever its first build met: logged there
            return False
        if agent is None or not agent.carries_on:
            return False
        claim = await self._takeovers.take_over(
            row.user_id, row.session_id, row.agent_type, dead, self._ttl
        )
        if claim is None:
            return False
        try:
            frames = await self._logs.history(claim.user_id, claim.task_id)
            earlier = await self._store.recent_turns(
                row.user_id, row.session_id, self._memory_turns, row.id
            )
            project = await self._projects.for_turn(row.user_id, row.session_id, False, None)
            # Last: once the row is this instance's, nothing may stop the turn's launch.
            taken = None
            if frames is not None:
                taken = await self._store.take_over(row.id, dead, row.takeovers)
        except (TaskBackendUnavailable, StoreUnavailable):
            await self._takeovers.hand_back(claim, dead)
            raise
        except BaseException:
            await self._claims.release(claim)
            raise
        if frames is None or taken is None:
            # Nothing whole to go on from, or the turn ended or moved meanwhile.
            await self._claims.release(claim)
            return False
        turn = self._turn(claim, taken, earlier, frames, project.project)
        log.info(
            "carrying on turn %s of conversation %s from instance %s (move %d)",
            row.id,
            row.session_id,
            dead,
            taken.takeovers,
        )
        launched = self._turns.run(agent, claim, turn, run=Run(claim, RunLog(base=len(frames))))
        if turn.webhook is not None:
            self._webhooks.notify(launched, turn.webhook)
        return True

    def _turn(
        self,
        claim: Claim,
        row: StoredTurn,
        earlier: list[StoredTurn],
        frames: list[bytes],
        project: InProject | None,
    ) -> Turn:
        """The turn as its first instance ran it, and what its log shows it had done."""
        asked = row.carry_on
        events = tuple(event for _, event in decode_frames(b"".join(frames)))
        model_id = row.model if row.model and row.model in self._models.ids() else None
        return Turn(
            key=ConversationKey(claim.user_id, claim.conversation_id),
            question=row.question,
            task_id=claim.task_id,
            file_id=row.fileid,
            parent_id=row.parent_id,
            row_id=row.id or 0,
            earlier=earlier,
            model_id=model_id or DEFAULT_MODEL_ID,
            model_named=True,
            tool_approval=asked.tool_approval if asked else None,
            review_plan=asked.review_plan if asked else False,
            webhook=asked.webhook if asked else None,
            project=project,
            temporary=asked.temporary if asked else False,
            carried=Carried(events, row.create_time),
            takeovers=row.takeovers,
        )
