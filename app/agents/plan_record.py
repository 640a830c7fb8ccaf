"""The plan a turn stores, built from its `plan`, `step` and `critique` events.

Built from the events rather than handed over by the agent, as tool calls
are: what the history shows is what the stream showed, whichever agent
plans. A plan shown again (a resumed turn) replaces its round.
"""

from __future__ import annotations

from app.core.events import CritiqueEvent, PlanEvent, StepEvent
from app.store.records import PlanCritique, PlanRound, PlanTask

PlanEvents = PlanEvent | StepEvent | CritiqueEvent
PLAN_EVENTS = (PlanEvent, StepEvent, CritiqueEvent)


def record_plan(plan: list[PlanRound], event: PlanEvents) -> None:
    """Apply one event to `plan` in place."""
    if isinstance(event, PlanEvent):
        tasks = [
            PlanTask(id=t.id, title=t.title, depends_on=list(t.depends_on), status=t.status)
            for t in event.tasks
        ]
        kept = [r for r in plan if r.round != event.round]
        plan[:] = [*kept, PlanRound(round=event.round, tasks=tasks)]
    elif isinstance(event, StepEvent):
        for index, round_ in enumerate(plan):
            tasks = [
                t.model_copy(
                    update={
                        "status": event.status,
                        "summary": event.summary,
                        "sources": [{"url": s.url, "title": s.title} for s in event.sources],
                    }
                )
                if t.id == event.task_id
                else t
                for t in round_.tasks
            ]
            plan[index] = round_.model_copy(update={"tasks": tasks})
    else:
        critique = PlanCritique(passed=event.passed, feedback=event.feedback)
        plan[:] = [
            r.model_copy(update={"critique": critique}) if r.round == event.round else r
            for r in plan
        ]
