"""The model's side of a deep research, for tests: answers by step, with hooks a test sets.

A `Researcher` answers the deep agent's calls on the scripted in-process
model (`model()`, for `create_app(settings, model=...)`), recognising each
step by the agent's own prompt. `over_http` answers them as any vendor's
HTTP fake receives them, for a `Behaving` responder (tests/fakes/model_behaviours.py).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import orjson

from app.agents.deep import prompts
from app.llm.errors import ModelError
from tests.fakes import scripted_server
from tests.fakes.scripted_server import Body, ScriptedServer
from tests.support.scripted_model import ModelRequest, Reply, ScriptedModel

REPORT = "Heat pumps are growing [1], and cheap to run [3]."
GATE_SECONDS = 5.0
"""How long a task waits to see another one start before the test calls it sequential."""

STEPS = {
    "clarify": prompts.CLARIFY,
    "brief": prompts.BRIEF,
    "plan": prompts.PLAN,
    "task": prompts.TASK,
    "critique": prompts.CRITIQUE,
    "report": prompts.REPORT,
}


def step_of(request: ModelRequest) -> str:
    return step_named(request.messages[0].text_content())


def step_named(system: str) -> str:
    """The step whose prompt `system` is."""
    return next(name for name, prompt in STEPS.items() if system.startswith(prompt.split("{")[0]))


class Researcher:
    """The model's side of a research: plain answers by step, and hooks a test sets.

    `plans` are the planner's answers in order (JSON text, valid or not);
    `queries` what a task (by title) searches, when not its title;
    `critiques` the feedback of failing critiques, before one that passes;
    `hold` makes a task's first call wait until the event is set; `fail` makes
    a task's first call raise that model error; `calls` counts calls by step,
    and by task title for tasks, and `order` lists them as they came.
    """

    def __init__(self, *plans: str, clarify: str = "", critiques: tuple[str, ...] = ()) -> None:
        self.plans = list(plans)
        self.clarify = clarify
        self.critiques = list(critiques)
        self.queries: dict[str, str] = {}
        self.hold: dict[str, asyncio.Event] = {}
        self.fail: dict[str, ModelError] = {}
        self.arrived: dict[str, asyncio.Event] = {}
        self.calls: Counter[str] = Counter()
        self.order: list[str] = []
        self.requests: dict[str, list[ModelRequest]] = {}

    def model(self) -> ScriptedModel:
        return ScriptedModel(*[self.answer] * 200)

    async def answer(self, request: ModelRequest) -> Reply | str:
        step = step_of(request)
        name = task_title(request) if step == "task" else step
        self.calls[name] += 1
        self.order.append(name)
        self.requests.setdefault(name, []).append(request)
        self.arrived.setdefault(name, asyncio.Event()).set()
        if step == "clarify":
            if self.clarify:
                return orjson.dumps({"needClarification": True, "questions": self.clarify}).decode()
            return '{"needClarification": false}'
        if step == "brief":
            return "Topic: heat pumps.\n1. Market\n2. Costs"
        if step == "plan":
            return self.plans.pop(0)
        if step == "critique":
            if self.critiques:
                return orjson.dumps({"passed": False, "feedback": self.critiques.pop(0)}).decode()
            return '```json\n{"passed": true, "feedback": ""}\n```'
        if step == "report":
            return Reply.text(REPORT, reasoning="Market first, then costs.")
        if name in self.hold and self.calls[name] == 1:
            await self.hold[name].wait()
        if name in self.fail and self.calls[name] == 1:
            raise self.fail[name]
        if not request.tool_results():
            return Reply.tool_calls(("web_search", {"query": self.queries.get(name, name)}))
        return f"Findings on {name}."

    async def overlap(self, first: str, second: str) -> bool:
        """Whether `second` was called while `first` waited: both ran at the same time."""
        try:
            async with asyncio.timeout(GATE_SECONDS):
                await self.arrived.setdefault(second, asyncio.Event()).wait()
        except TimeoutError:
            return False
        return True


def task_title(request: ModelRequest) -> str:
    match = re.search(r"Your task: (.+)", request.messages[1].text_content())
    assert match is not None
    return match.group(1)


PLAN = {
    "tasks": [
        {"id": "a", "title": "Market size", "goal": "How big it is", "dependsOn": []},
        {"id": "b", "title": "Running costs", "goal": "What it costs", "dependsOn": []},
    ]
}
"""A plan as a server holding it to the schema writes it: every field given."""
_TASK = re.compile(r'Your task: ([^\\"]+)')


def over_http(server: ScriptedServer, body: Body) -> str | scripted_server.Reply:
    """A research's answers, step by step, to a request as any vendor's fake reads it."""
    step = step_named(server.system_text(body))
    if step == "task":
        if server.has_tool_results(body):
            return "Findings on the task."
        match = _TASK.search(orjson.dumps(body).decode())
        assert match is not None
        return scripted_server.Reply.tool_calls([("web_search", {"query": match.group(1)})])
    answers = {
        "clarify": '{"needClarification": false, "questions": "", "remember": []}',
        "brief": "Topic: heat pumps.\n1. Market\n2. Costs",
        "plan": orjson.dumps(PLAN).decode(),
        "critique": '{"passed": true, "feedback": ""}',
        "report": REPORT,
    }
    return answers[step]
