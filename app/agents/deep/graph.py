"""The deep research graph: its nodes, each a small async function, and the wiring at the end.

    clarify -> [ask: interrupt, wait for the user] -> brief
      -> { plan -> research x N (Send, by `dependsOn` waves) -> gather -> critique }
         up to `max_rounds` -> report

A node sends its events (progress lines, `plan`, `step`, tool calls) through
LangGraph's stream writer; the agent streams them out as they come. The
node that waits for the user does nothing but wait, because LangGraph runs
it again from its start when the answer comes. Tasks whose inputs are all
finished run together in one super-step (at most `max_concurrency` at a
time), so each wave is checkpointed, and a stopped wave keeps the tasks it
finished: LangGraph stores their writes and does not run them again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send, interrupt
from pydantic import ValidationError

from app.agents.deep import prompts
from app.agents.deep.reading import PASSAGE_CHARS, TurnReading
from app.agents.deep.rules import (
    STEP_NAMES,
    mend_clarify,
    mend_critique,
    mend_plan,
    plan_schema,
)
from app.agents.deep.state import (
    ClarifyDecision,
    Critique,
    DeepState,
    MemoryChange,
    PlanAnswer,
    ResearchPlan,
    Source,
    TaskInput,
    TaskRecord,
)
from app.agents.deep.structured import Emit, ModelSteps
from app.agents.react import ReActAgent, act
from app.agents.recall import context_prompt, context_tools
from app.agents.tool_history import CONTINUE_NOTE
from app.agents.turn import AgentCore, Turn, TurnState
from app.core.events import (
    CritiqueEvent,
    ErrorEvent,
    PlanEvent,
    PlannedTask,
    Reference,
    SourceLink,
    StepEvent,
    TextEvent,
    ThinkingEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from app.core.messages import Msg, ToolUseBlock, new_call_id
from app.llm.base import ChatModel
from app.llm.errors import ModelError, user_message
from app.tools.base import Tool
from app.tools.remember import REMEMBER
from app.tools.untrusted import untrusted

MAX_TASKS = 6
SOURCE_EXCERPT_CHARS = PASSAGE_CHARS
"""Of each source's text, what the state keeps and the report's writer reads."""


class TaskResearcher(ReActAgent):
    """One task's ReAct run with web search and `fetch_page`: the existing loop, with its own
    round limit; its searches read their best results when the turn reads (reading.py)."""

    agent_type = "deep"

    def __init__(self, core: AgentCore, search: Tool | None, reader: Tool | None = None) -> None:
        super().__init__(core)
        self._search = search
        self._reader = reader

    def tools(self, turn: Turn) -> Sequence[Tool]:
        return [tool for tool in (self._search, self._reader) if tool is not None]

    async def research(
        self,
        turn: Turn,
        task: TaskRecord,
        inputs: list[TaskRecord],
        brief: str,
        emit: Emit,
        reading: TurnReading | None = None,
    ) -> tuple[str, list[Source], TurnState]:
        """The task's summary and sources; its tool calls go out tagged with its id."""
        own = TurnState()
        # Each task runs on the task role's model (`DEEP_TASK_MODEL`), the turn's by default,
        # and from its own start: the plan review a turn goes on after is no tool call of the
        # task's loop to go on with (`ReActAgent._go_on`), nor is the turn's answer so far
        # when it was carried on from another instance.
        turn = dataclasses.replace(
            turn,
            model_id=self.core.role_model("task", turn.model_id),
            resumed=None,
            answer=None,
            carried=None,
        )
        messages = [
            Msg.text("system", prompts.TASK.format(today=_today())),
            Msg.text("user", _task_prompt(task, inputs, brief)),
        ]
        tools = {tool.schema.name: tool for tool in self.tools(turn)}
        if reading is not None and self._search is not None:
            searching = reading.for_task(self._search, f"{task['title']} {task['goal']}")
            tools[self._search.schema.name] = searching
        async for event in self.loop(turn, own, tools, messages):
            if isinstance(event, ToolStartEvent | ToolEndEvent):
                emit(dataclasses.replace(event, task_id=task["id"]))
            elif isinstance(event, ErrorEvent):
                emit(event)
        sources = [
            Source(url=r.url, title=r.title, content=r.content[:SOURCE_EXCERPT_CHARS])
            for r in own.references.values()
        ]
        return messages[-1].text_content(), sources, own


@dataclass(slots=True)
class DeepContext:
    """What one turn's run of the graph works with; never checkpointed."""

    steps: ModelSteps
    researcher: TaskResearcher
    max_rounds: int
    report_model: ChatModel | None = None
    """Who writes the report (`DEEP_REPORT_MODEL`); None: the turn's model."""
    reading: TurnReading | None = None
    """How the turn's tasks read their search results; None: snippets only."""
    report_so_far: str = ""
    """The report as far as it was written when the turn moved from another instance: the
    report goes on from there rather than being written (and shown) twice."""

    @property
    def memory(self) -> list[Msg]:
        """The conversation's words only: earlier tool calls (every task's searches) stay out."""
        return [
            Msg.text(m.role, m.text_content())
            for m in self.steps.state.memory
            if m.role in ("user", "assistant") and m.text_content()
        ]


Rt = Runtime[DeepContext]


async def clarify(state: DeepState, *, runtime: Rt) -> dict[str, Any]:
    ctx, emit = runtime.context, runtime.stream_writer
    emit(ThinkingEvent("Reading the request…\n"))
    context = context_prompt(ctx.steps.turn, ctx.steps.state)
    messages = [
        Msg.text("system", prompts.CLARIFY.format(today=_today(), context=context)),
        *ctx.memory,
        Msg.text("user", state["question"]),
    ]
    decision = await ctx.steps.structured(
        messages, ClarifyDecision, emit, step=STEP_NAMES["clarify"], mend=mend_clarify
    )
    await _remember(ctx, decision.remember, emit)
    if not decision.need_clarification:
        return {}
    emit(TextEvent(decision.questions))
    return {"questions": decision.questions}


async def _remember(ctx: DeepContext, changes: list[MemoryChange], emit: Emit) -> None:
    """The memory changes the first step asked for, run as `remember` calls the turn shows."""
    turn, state = ctx.steps.turn, ctx.steps.state
    tools = {t.schema.name: t for t in context_tools(ctx.researcher.core, turn, state)}
    remember = tools.get(REMEMBER)
    if remember is None:
        return
    for change in changes:
        arguments = change.model_dump(exclude_defaults=True)
        call = ToolUseBlock(new_call_id(), REMEMBER, arguments)
        async for event in act(ctx.researcher.core, turn, state, {REMEMBER: remember}, [call], []):
            emit(event)


async def ask(state: DeepState) -> dict[str, Any]:
    """Wait for the user's answer; run again from here when it comes, so it does nothing else."""
    return {"answer": str(interrupt(state["questions"]))}


async def brief(state: DeepState, *, runtime: Rt) -> dict[str, Any]:
    ctx, emit = runtime.context, runtime.stream_writer
    context = context_prompt(ctx.steps.turn, ctx.steps.state, remembers=False)
    messages = [
        Msg.text("system", prompts.BRIEF.format(today=_today()) + context),
        *ctx.memory,
        Msg.text("user", _request(state)),
    ]
    text = await ctx.steps.text(messages, emit)
    emit(ThinkingEvent(f"Research brief:\n{text.strip()}\n"))
    return {"brief": text}


async def plan(state: DeepState, *, runtime: Rt) -> dict[str, Any]:
    ctx, emit = runtime.context, runtime.stream_writer
    round_no = state.get("round", 0) + 1
    previous = ""
    if state.get("plan_feedback"):
        previous = prompts.PLAN_REJECTED.format(feedback=state["plan_feedback"])
    elif round_no > 1:
        feedback = state["critiques"][-1]["feedback"] if state.get("critiques") else ""
        previous = prompts.PLAN_AGAIN.format(
            round=round_no, feedback=f"{feedback}\n\n{_findings(state)}"
        )
    system = prompts.PLAN.format(today=_today(), max_tasks=MAX_TASKS, previous=previous)
    messages = [Msg.text("system", system), Msg.text("user", state["brief"])]
    planned = await ctx.steps.structured(
        messages,
        PlanAnswer,
        emit,
        step=STEP_NAMES["plan"],
        schema=plan_schema(MAX_TASKS),
        mend=lambda answer: mend_plan(answer, MAX_TASKS),
    )
    tasks = _records(planned, round_no)
    emit(ThinkingEvent(f"Plan: {len(tasks)} tasks\n"))
    emit(PlanEvent(round_no, [_planned(t) for t in tasks.values()]))
    return {"round": round_no, "tasks": tasks, "plan_feedback": ""}


def _records(planned: PlanAnswer, round_no: int) -> dict[str, TaskRecord]:
    """A round's tasks as the state keeps them, numbered `round.n` in plan order."""
    ids = {t.id: f"{round_no}.{n}" for n, t in enumerate(planned.tasks, start=1)}
    return {
        ids[t.id]: TaskRecord(
            id=ids[t.id],
            round=round_no,
            title=t.title,
            goal=t.goal or t.title,
            depends_on=[ids[d] for d in t.depends_on],
            status="pending",
            summary="",
            sources=[],
        )
        for t in planned.tasks
    }


def after_plan(state: DeepState) -> list[Send] | str:
    """To the user's review of the plan when the research asked for one, else to its tasks."""
    return "review" if state.get("review_plan") else next_tasks(state)


async def review(state: DeepState, *, runtime: Rt) -> dict[str, Any]:
    """Wait for the user's decision on the round's plan (`reviewPlan`); run again from here
    when it comes. `approve` keeps it, `edit` replaces it with the user's tasks, `reject`
    (or a plain message) plans the round again with the user's words as feedback."""
    round_no = state["round"]
    current = {i: t for i, t in state["tasks"].items() if t["round"] == round_no}
    asked = {"kind": "plan", "round": round_no, "tasks": [_reviewed(t) for t in current.values()]}
    answer = interrupt(asked)
    if not isinstance(answer, dict):
        answer = {"decision": "reject", "message": str(answer)}
    emit = runtime.stream_writer
    removed: dict[str, Any] = dict.fromkeys(current)
    if answer.get("decision") == "edit":
        try:
            edited = ResearchPlan.model_validate(answer.get("arguments") or {})
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"]
            emit(ThinkingEvent(f"The edited plan is not valid ({reason}): review it again.\n"))
            return {"review_error": reason}
        tasks = _records(edited, round_no)
        emit(ThinkingEvent(f"Plan edited: {len(tasks)} tasks\n"))
        emit(PlanEvent(round_no, [_planned(t) for t in tasks.values()]))
        return {"tasks": removed | tasks, "review_error": ""}
    if answer.get("decision") == "reject":
        feedback = str(answer.get("message") or "The user rejected the plan.")
        emit(ThinkingEvent("Planning again, as the user asked\n"))
        return {"tasks": removed, "round": round_no - 1, "plan_feedback": feedback}
    return {"review_error": ""}


def after_review(state: DeepState) -> list[Send] | str:
    """Plan again after a rejection, ask again after an edit that is not a valid plan."""
    if state.get("review_error"):
        return "review"
    return "plan" if state.get("plan_feedback") else next_tasks(state)


def _reviewed(task: TaskRecord) -> dict[str, Any]:
    """A task as the user reviews (and may edit) it: `{id, title, goal, dependsOn}`."""
    return {
        "id": task["id"],
        "title": task["title"],
        "goal": task["goal"],
        "dependsOn": list(task["depends_on"]),
    }


def next_tasks(state: DeepState) -> list[Send] | str:
    """The round's tasks whose inputs are all finished, each sent to run; else the critique."""
    current = [t for t in state["tasks"].values() if t["round"] == state["round"]]
    finished = {t["id"] for t in current if t["status"] in ("completed", "failed")}
    ready = [t for t in current if t["status"] == "pending" and set(t["depends_on"]) <= finished]
    if not ready:
        return "critique"
    return [
        Send(
            "research",
            TaskInput(
                task=task,
                inputs=[state["tasks"][d] for d in task["depends_on"]],
                brief=state["brief"],
            ),
        )
        for task in ready
    ]


async def research(state: TaskInput, *, runtime: Rt) -> dict[str, Any]:
    """One task, with the results of the tasks it depends on (`state` is what `Send` gave)."""
    ctx, emit = runtime.context, runtime.stream_writer
    task = state["task"]
    emit(ThinkingEvent(f"Task {task['id']}: {task['title']}\n"))
    emit(StepEvent(task["id"], "running"))
    try:
        summary, sources, own = await ctx.researcher.research(
            ctx.steps.turn, task, state["inputs"], state["brief"], emit, ctx.reading
        )
    except ModelError as exc:
        emit(StepEvent(task["id"], "failed", user_message(exc.code)))
        raise
    ctx.steps.state.add_usage_of(own)
    emit(StepEvent(task["id"], "completed", summary, [_source(s) for s in sources]))
    emit(ThinkingEvent(f"Task {task['id']} done\n"))
    done = TaskRecord(**{**task, "status": "completed", "summary": summary, "sources": sources})
    return {"tasks": {task["id"]: done}}


async def gather(state: DeepState) -> dict[str, Any]:
    """Where a wave of tasks meets, so the next wave is chosen once, from all their results."""
    return {}


async def critique(state: DeepState, *, runtime: Rt) -> dict[str, Any]:
    ctx, emit = runtime.context, runtime.stream_writer
    messages = [
        Msg.text("system", prompts.CRITIQUE),
        Msg.text("user", f"Brief:\n{state['brief']}\n\nFindings:\n{_findings(state)}"),
    ]
    verdict = await ctx.steps.structured(
        messages, Critique, emit, step=STEP_NAMES["critique"], mend=mend_critique
    )
    line = "passed" if verdict.passed else f"needs {verdict.feedback.strip()}"
    emit(ThinkingEvent(f"Critique: {line}\n"))
    emit(CritiqueEvent(state["round"], verdict.passed, verdict.feedback))
    record = {"round": state["round"], "passed": verdict.passed, "feedback": verdict.feedback}
    return {"critiques": [record]}


def after_critique(state: DeepState, *, runtime: Rt) -> str:
    if state["critiques"][-1]["passed"] or state["round"] >= runtime.context.max_rounds:
        return "report"
    return "plan"


async def report(state: DeepState, *, runtime: Rt) -> dict[str, Any]:
    ctx, emit = runtime.context, runtime.stream_writer
    sources = numbered_sources(state)
    listing = "\n".join(
        f"[{n}] {s['title']} ({s['url']})\n{s['content']}" for n, s in enumerate(sources, 1)
    )
    context = context_prompt(ctx.steps.turn, ctx.steps.state, remembers=False)
    messages = [
        Msg.text("system", prompts.REPORT.format(today=_today()) + context),
        *ctx.memory,
        Msg.text(
            "user",
            f"{_request(state)}\n\nBrief:\n{state['brief']}\n\n"
            f"Task results:\n{_findings(state)}\n\nSources:\n{untrusted(listing, 'sources')}",
        ),
    ]
    so_far = ctx.report_so_far
    if so_far:
        messages += [Msg.text("assistant", so_far), Msg.text("user", CONTINUE_NOTE)]
    else:
        emit(ThinkingEvent("Writing the report…\n"))
    text = await ctx.steps.text(messages, emit, stream=True, model=ctx.report_model)
    ctx.steps.state.references = references_of(state)
    return {"report": so_far + text}


def references_of(state: DeepState) -> dict[str, Reference]:
    """The report's sources as the turn's references."""
    return {s["url"]: _reference(s) for s in numbered_sources(state)}


def numbered_sources(state: DeepState) -> list[Source]:
    """Every task's sources, deduplicated by URL, in task order: the report's `[n]`."""
    seen: dict[str, Source] = {}
    for task in _ordered(state):
        for source in task["sources"]:
            seen.setdefault(source["url"], source)
    return list(seen.values())


def shown_again(state: DeepState) -> list[PlanEvent | CritiqueEvent | StepEvent]:
    """A resumed research's plan as it stands, so the new turn (and its history) has it whole."""
    events: list[PlanEvent | CritiqueEvent | StepEvent] = []
    tasks = _ordered(state)
    critiques = {c["round"]: c for c in state.get("critiques", [])}
    for round_no in sorted({t["round"] for t in tasks}):
        in_round = [t for t in tasks if t["round"] == round_no]
        events.append(PlanEvent(round_no, [_planned(t) for t in in_round]))
        events.extend(
            StepEvent(t["id"], "completed", t["summary"], [_source(s) for s in t["sources"]])
            for t in in_round
            if t["status"] == "completed"
        )
        if round_no in critiques:
            c = critiques[round_no]
            events.append(CritiqueEvent(round_no, c["passed"], c["feedback"]))
    return events


def build_graph() -> StateGraph[DeepState, DeepContext, DeepState, DeepState]:
    graph = StateGraph(DeepState, context_schema=DeepContext)
    graph.add_node("clarify", clarify)
    graph.add_node("ask", ask)
    graph.add_node("brief", brief)
    graph.add_node("plan", plan)
    graph.add_node("review", review)
    graph.add_node("research", research, input_schema=TaskInput)
    graph.add_node("gather", gather)
    graph.add_node("critique", critique)
    graph.add_node("report", report)
    graph.add_edge(START, "clarify")
    graph.add_conditional_edges(
        "clarify", lambda s: "ask" if s.get("questions") else "brief", ["ask", "brief"]
    )
    graph.add_edge("ask", "brief")
    graph.add_edge("brief", "plan")
    graph.add_conditional_edges("plan", after_plan, ["review", "research", "critique"])
    graph.add_conditional_edges("review", after_review, ["review", "plan", "research", "critique"])
    graph.add_edge("research", "gather")
    graph.add_conditional_edges("gather", next_tasks, ["research", "critique"])
    graph.add_conditional_edges("critique", after_critique, ["plan", "report"])
    graph.add_edge("report", END)
    return graph


DeepGraph = CompiledStateGraph[DeepState, DeepContext, DeepState, DeepState]


def _request(state: DeepState) -> str:
    """The original question, with the clarification asked and answered, if any."""
    text = f"Question: {state['question']}"
    if state.get("answer"):
        text += f"\n\nWe asked:\n{state['questions']}\n\nThe user answered:\n{state['answer']}"
    return text


def _task_prompt(task: TaskRecord, inputs: list[TaskRecord], brief: str) -> str:
    text = f"Research brief:\n{brief}\n\nYour task: {task['title']}\n{task['goal']}"
    for source in inputs:
        text += f"\n\nResult of task {source['id']} ({source['title']}):\n{source['summary']}"
    return text


def _findings(state: DeepState) -> str:
    return "\n\n".join(
        f"Task {t['id']} ({t['title']}): {t['summary']}"
        for t in _ordered(state)
        if t["status"] == "completed"
    )


def _ordered(state: DeepState) -> list[TaskRecord]:
    """Tasks in plan order (`round.n`), whatever order they finished in."""
    return sorted(
        state.get("tasks", {}).values(), key=lambda t: [int(p) for p in t["id"].split(".")]
    )


def _planned(task: TaskRecord) -> PlannedTask:
    return PlannedTask(task["id"], task["title"], tuple(task["depends_on"]), task["status"])


def _reference(source: Source) -> Reference:
    return Reference(source["url"], source["title"], source["content"])


def _source(source: Source) -> SourceLink:
    return SourceLink(source["url"], source["title"])


def _today() -> str:
    return datetime.now(UTC).date().isoformat()
