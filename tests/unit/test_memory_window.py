"""The memory window: whole turns, newest first, within the token budget."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.agents.memory import TURN_OVERHEAD_TOKENS, window
from app.agents.tool_history import INTERRUPTED_RESULT
from app.core.messages import ToolResultBlock
from app.llm.tokens import TokenCounter, install_encodings
from app.store.models import StoredTurn
from app.store.records import ToolCall


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    install_encodings(Path(tmp_path_factory.mktemp("tiktoken")))
    return TokenCounter()


def turn(
    n: int,
    question: str,
    answer: str | None,
    status: str = "completed",
    tools: list[ToolCall] | None = None,
) -> StoredTurn:
    now = datetime.now(UTC)
    return StoredTurn(
        id=n,
        session_id="c",
        user_id="u",
        agent_type="chat",
        question=question,
        answer=answer,
        thinking=None,
        tools=tools or [],
        reference=[],
        recommend=[],
        files=[],
        fileid=None,
        status=status,  # type: ignore[arg-type]
        error=None,
        first_response_time=None,
        total_response_time=None,
        prompt_tokens=0,
        completion_tokens=0,
        create_time=now,
        update_time=now,
    )


def test_turns_come_back_oldest_first_as_question_answer_pairs(tokens: TokenCounter) -> None:
    msgs = window([turn(1, "q1", "a1"), turn(2, "q2", "a2")], tokens, budget=1000)
    assert [(m.role, m.text_content()) for m in msgs] == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2"),
        ("assistant", "a2"),
    ]


def test_the_budget_keeps_the_newest_whole_turns(tokens: TokenCounter) -> None:
    turns = [turn(n, f"question {n}", "word " * 50) for n in range(1, 6)]
    one_turn = tokens.count("question 1") + tokens.count("word " * 50) + TURN_OVERHEAD_TOKENS
    msgs = window(turns, tokens, budget=2 * one_turn + 1)
    assert [m.text_content() for m in msgs if m.role == "user"] == ["question 4", "question 5"]


def test_a_turn_larger_than_the_budget_is_left_out_not_cut(tokens: TokenCounter) -> None:
    msgs = window([turn(1, "q", "long " * 500)], tokens, budget=100)
    assert msgs == []


def test_turns_without_an_answer_are_skipped(tokens: TokenCounter) -> None:
    msgs = window([turn(1, "failed", None, "failed"), turn(2, "q2", "a2")], tokens, budget=1000)
    assert [m.text_content() for m in msgs] == ["q2", "a2"]


def test_tool_calls_sit_between_question_and_answer_each_with_a_result(
    tokens: TokenCounter,
) -> None:
    cut_short = ToolCall(id="call_1", name="web_search", arguments='{"query": "x"}')
    msgs = window([turn(1, "q1", "partial", "stopped", [cut_short])], tokens, budget=1000)

    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert [b.id for b in msgs[1].tool_uses()] == ["call_1"]
    results = [b for b in msgs[2].content if isinstance(b, ToolResultBlock)]
    assert [(b.tool_use_id, b.output) for b in results] == [("call_1", INTERRUPTED_RESULT)]
    assert msgs[3].text_content() == "partial"


def test_a_turn_with_calls_but_no_answer_is_its_question_and_calls(tokens: TokenCounter) -> None:
    """A call the user declined with a message: the next turn's model hears of it."""
    declined = ToolCall(id="call_1", name="write_file", arguments="{}", result="No.", is_error=True)
    msgs = window([turn(1, "Write my notes", "", "stopped", [declined])], tokens, budget=1000)

    assert [m.role for m in msgs] == ["user", "assistant", "tool"]
    assert [b.id for b in msgs[1].tool_uses()] == ["call_1"]


def test_tool_calls_count_against_the_budget(tokens: TokenCounter) -> None:
    big = ToolCall(id="c", name="t", arguments="{}", result="data " * 400)
    turns = [turn(1, "q1", "a1", tools=[big]), turn(2, "q2", "a2")]

    msgs = window(turns, tokens, budget=200)

    assert [m.text_content() for m in msgs] == ["q2", "a2"]
