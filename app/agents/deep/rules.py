"""The rules of deep research's structured steps: the schema each sends, and what code mends.

The schema says every rule JSON Schema can say (a plan of one to `max_tasks`
tasks, each with an id and a title); a provider's strict mode takes the
nearest form of it (`app/llm/json_schema.py`). What a schema cannot say and
code can put right without the model is mended, and the turn's thinking says
so: a dependency on no task of the plan is dropped, as is one that closes a
cycle; a task id given twice gets one of its own; a clarification asked for
with no question, or a critique that fails the research without saying what
is missing, cannot be acted on, so the research goes on.
"""

from __future__ import annotations

from typing import Any

from app.agents.deep.state import ClarifyDecision, Critique, PlanAnswer, PlannedTaskOut
from app.llm.json_schema import closed_object, text

Schema = dict[str, Any]
STEP_NAMES = {
    "clarify": "Reading the research request",
    "plan": "Planning the research",
    "critique": "Reviewing what the research found",
}
"""Each structured step as the user reads it, in the sentence of its failure."""


def plan_schema(max_tasks: int) -> Schema:
    task = closed_object(
        {
            "id": text(),
            "title": text(),
            "goal": {"type": "string"},
            "dependsOn": {"type": "array", "items": {"type": "string"}},
        }
    )
    tasks = {"type": "array", "items": task, "minItems": 1, "maxItems": max_tasks}
    return closed_object({"tasks": tasks})


def mend_plan(plan: PlanAnswer, max_tasks: int) -> tuple[PlanAnswer, list[str]]:
    """The plan with at most `max_tasks` tasks, ids of their own, and dependencies only on
    earlier-resolvable tasks of the plan (none that is missing, itself, or a cycle)."""
    notes: list[str] = []
    tasks = plan.tasks
    if len(tasks) > max_tasks:
        notes.append(f"the plan had {len(tasks)} tasks; the first {max_tasks} kept.")
        tasks = tasks[:max_tasks]
    ids: list[str] = []
    for task in tasks:
        own = task.id
        while own in ids:
            own = f"{own}+"
        if own != task.id:
            notes.append(f"task {task.title!r}: its id {task.id!r} was taken; it is {own!r}.")
        ids.append(own)
    first = {task.id: own for task, own in reversed(list(zip(tasks, ids, strict=True)))}
    kept: dict[str, list[str]] = {}
    mended = []
    for task, own in zip(tasks, ids, strict=True):
        depends: list[str] = []
        for wanted in task.depends_on:
            target = first.get(wanted)
            if target is None or target == own or _reaches(kept, target, own):
                why = "no such task" if target is None else "a cycle"
                notes.append(f"task {task.title!r}: its dependency on {wanted!r} dropped ({why}).")
            elif target not in depends:
                depends.append(target)
        kept[own] = depends
        mended.append(PlannedTaskOut(id=own, title=task.title, goal=task.goal, depends_on=depends))
    return PlanAnswer(tasks=mended), notes


def _reaches(edges: dict[str, list[str]], start: str, goal: str) -> bool:
    """Whether `start` depends on `goal`, directly or through other tasks."""
    seen, todo = set(), [start]
    while todo:
        current = todo.pop()
        if current == goal:
            return True
        if current not in seen:
            seen.add(current)
            todo.extend(edges.get(current, []))
    return False


def mend_clarify(decision: ClarifyDecision) -> tuple[ClarifyDecision, list[str]]:
    if not decision.need_clarification or decision.questions.strip():
        return decision, []
    note = "a clarification was asked for without a question: researching the request as it is."
    return decision.model_copy(update={"need_clarification": False}), [note]


def mend_critique(verdict: Critique) -> tuple[Critique, list[str]]:
    if verdict.passed or verdict.feedback.strip():
        return verdict, []
    note = "the critique named nothing missing: the research is taken as complete."
    return verdict.model_copy(update={"passed": True}), [note]
