"""What the deep research graph keeps: the model's structured answers and the graph's state.

The structured answers (clarify decision, plan, critique) are pydantic
models: a model's answer is validated against them, mended where code can
mend it (rules.py, which also builds the schema each step sends), and an
answer that still does not fit is sent back once with what was wrong
(structured.py).

The graph's state holds plain JSON values only (strings, lists, dicts), so
any checkpoint store can keep it and any later version of this code can
read it back. Each task's result (its summary and its sources) stays in the
state until the report is written from all of them: nothing is compressed
away.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

from pydantic import AliasChoices, BaseModel, Field, model_validator

TaskStatus = Literal["pending", "running", "completed", "failed"]


class MemoryChange(BaseModel):
    """A change to the user's memory the request calls for: the `remember` tool's arguments."""

    action: Literal["save", "update", "forget"]
    id: str = ""
    content: str = ""


class ClarifyDecision(BaseModel):
    """Whether research can start, or what the user must say first."""

    need_clarification: bool = Field(
        validation_alias=AliasChoices("needClarification", "need_clarification")
    )
    questions: str = ""
    """The questions for the user, in their language, when clarification is needed (without
    them, research starts: rules.py)."""
    remember: list[MemoryChange] = Field(default_factory=list, max_length=5)
    """What to keep of the user (a lasting fact or preference they state): the first step
    is the one that reads their words, so deep research keeps memory here, with no call more."""


class PlannedTaskOut(BaseModel):
    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    goal: str = ""
    """What to find out, for the task's own researcher."""
    depends_on: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("dependsOn", "depends_on")
    )


class PlanAnswer(BaseModel):
    """A plan as the model writes it: its ids and dependencies are mended before use (a
    dependency on no task dropped, a cycle broken: rules.py)."""

    tasks: list[PlannedTaskOut] = Field(min_length=1)


class ResearchPlan(PlanAnswer):
    """A plan the research can run: as the user edits it, refused when it does not hold."""

    tasks: list[PlannedTaskOut] = Field(min_length=1, max_length=8)

    @model_validator(mode="after")
    def _dependencies_resolve(self) -> ResearchPlan:
        ids = [t.id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("task ids must be unique")
        known = set(ids)
        for task in self.tasks:
            unknown = [d for d in task.depends_on if d not in known]
            if unknown:
                raise ValueError(f"task {task.id} depends on unknown tasks {unknown}")
        done: set[str] = set()
        pending = {t.id: set(t.depends_on) for t in self.tasks}
        while pending:
            ready = [i for i, deps in pending.items() if deps <= done]
            if not ready:
                raise ValueError(f"tasks {sorted(pending)} depend on each other in a cycle")
            for i in ready:
                done.add(i)
                del pending[i]
        return self


class Critique(BaseModel):
    passed: bool
    feedback: str = ""


class Source(TypedDict):
    url: str
    title: str
    content: str


class TaskRecord(TypedDict):
    """One task of a plan, with its result once it has one."""

    id: str
    """`round.n`: unique across the rounds of one research."""
    round: int
    title: str
    goal: str
    depends_on: list[str]
    status: TaskStatus
    summary: str
    sources: list[Source]


class RoundCritique(TypedDict):
    round: int
    passed: bool
    feedback: str


def merge_tasks(old: dict[str, TaskRecord], new: dict[str, TaskRecord]) -> dict[str, TaskRecord]:
    """Tasks finishing in parallel each write their own record; none overwrites another's.

    A task written as None is removed (a plan the user edited or rejected)."""
    return {key: task for key, task in {**old, **new}.items() if task is not None}


class DeepState(TypedDict, total=False):
    question: str
    """The question that started the research; an answer to a clarification never replaces it."""
    questions: str
    """What the agent asked the user before researching, if anything."""
    answer: str
    """The user's answer to those questions."""
    brief: str
    round: int
    tasks: Annotated[dict[str, TaskRecord], merge_tasks]
    critiques: Annotated[list[RoundCritique], operator.add]
    report: str
    review_plan: bool
    """Each round's plan waits for the user's decision before its tasks run (`reviewPlan`)."""
    plan_feedback: str
    """The user's words on a rejected plan, for the round planned again."""
    review_error: str
    """Why the user's edited plan was refused: the review is asked again."""


class TaskInput(TypedDict):
    """What `Send` hands one task run: the task, and the results of the tasks it depends on."""

    task: TaskRecord
    inputs: list[TaskRecord]
    brief: str
