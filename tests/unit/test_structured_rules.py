"""Deep research's and the follow-ups' schemas say their rules, and code mends what they cannot.

A plan's ids and dependencies are the model's own words, which no schema can
tie together: a dependency on no task, a cycle, an id given twice are mended
(the research runs what the model meant as nearly as it can tell) and each
repair is noted. A clarification without a question, or a critique that
fails the research without saying what is missing, cannot be acted on.
"""

from __future__ import annotations

from app.agents.deep.rules import mend_clarify, mend_critique, mend_plan, plan_schema
from app.agents.deep.state import ClarifyDecision, Critique, PlanAnswer, ResearchPlan
from app.agents.recommend import SCHEMA as FOLLOW_UPS
from app.llm.json_schema import strict_schema
from tests.fakes.schema_instances import schema_instance


def plan(*tasks: tuple[str, str, list[str]]) -> PlanAnswer:
    return PlanAnswer.model_validate(
        {"tasks": [{"id": i, "title": t, "dependsOn": d} for i, t, d in tasks]}
    )


def test_a_plan_with_broken_dependencies_is_mended_into_one_that_runs() -> None:
    tangled = plan(
        ("a", "Market", ["b", "zz", "a"]),
        ("b", "Costs", ["a"]),
        ("b", "Outlook", ["b"]),
    )

    mended, notes = mend_plan(tangled, max_tasks=6)

    assert [(t.id, t.depends_on) for t in mended.tasks] == [("a", ["b"]), ("b", []), ("b+", ["b"])]
    assert ResearchPlan.model_validate(mended.model_dump())
    assert notes == [
        "task 'Outlook': its id 'b' was taken; it is 'b+'.",
        "task 'Market': its dependency on 'zz' dropped (no such task).",
        "task 'Market': its dependency on 'a' dropped (a cycle).",
        "task 'Costs': its dependency on 'a' dropped (a cycle).",
    ]


def test_a_plan_over_its_task_limit_keeps_the_first_tasks_and_drops_what_needs_the_rest() -> None:
    long = plan(*[(str(n), f"Task {n}", [str(n + 1)]) for n in range(1, 5)])

    mended, notes = mend_plan(long, max_tasks=3)

    assert [(t.id, t.depends_on) for t in mended.tasks] == [("1", ["2"]), ("2", ["3"]), ("3", [])]
    assert notes == [
        "the plan had 4 tasks; the first 3 kept.",
        "task 'Task 3': its dependency on '4' dropped (no such task).",
    ]


def test_the_least_answer_to_each_schema_is_one_the_steps_take() -> None:
    for schema in (plan_schema(6), strict_schema(plan_schema(6))):
        assert schema is not None
        answer = PlanAnswer.model_validate(schema_instance(schema))
        assert ResearchPlan.model_validate(mend_plan(answer, 6)[0].model_dump())
    for follow_ups in (FOLLOW_UPS, strict_schema(FOLLOW_UPS)):
        assert follow_ups is not None
        assert schema_instance(follow_ups) == {"questions": ["x", "x", "x"]}


def test_a_question_or_a_gap_that_is_not_said_lets_the_research_go_on() -> None:
    asking = ClarifyDecision.model_validate({"needClarification": True, "questions": " "})
    failing = Critique(passed=False, feedback="")

    assert mend_clarify(asking)[0].need_clarification is False
    assert mend_critique(failing)[0].passed is True
    kept = ClarifyDecision.model_validate({"needClarification": True, "questions": "Which?"})
    assert mend_clarify(kept) == (kept, [])
    assert mend_critique(Critique(passed=False, feedback="No prices.")) == (
        Critique(passed=False, feedback="No prices."),
        [],
    )
