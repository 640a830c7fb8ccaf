"""A long task stays within the context: old outputs become stubs, then older rounds a summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.compaction import Compactor, stub_old_results
from app.agents.turn import Turn
from app.core.messages import Msg, ToolResultBlock, ToolUseBlock
from app.core.run import ConversationKey
from app.llm.errors import ModelConnectionError
from app.llm.tokens import TokenCounter, install_encodings
from tests.support.scripted_model import ModelRequest, ScriptedModel

TURN = Turn(ConversationKey("u1", "c1"), "Summarise the three reports", "t1")
BIG = "figure " * 400


@pytest.fixture
def tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TokenCounter:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    install_encodings(tmp_path / "tiktoken")
    return TokenCounter()


def round_of(n: int, name: str = "read_file", output: str = BIG) -> list[Msg]:
    call = ToolUseBlock(f"call_{n}", name, {"path": f"r{n}.txt"})
    return [Msg("assistant", [call]), Msg("tool", [ToolResultBlock(call.id, name, output)])]


def conversation(rounds: int) -> list[Msg]:
    messages = [Msg.text("system", "You work."), Msg.text("user", TURN.question)]
    messages += round_of(0, "load_skill", "# Skill: pdf-extract\n" + BIG)
    for n in range(1, rounds + 1):
        messages += round_of(n)
    return messages


def outputs(messages: list[Msg]) -> list[str]:
    return [b.output[:20] for m in messages for b in m.content if isinstance(b, ToolResultBlock)]


def test_outputs_beyond_the_last_few_become_stubs_and_skills_stay() -> None:
    messages = conversation(rounds=4)

    replaced = stub_old_results(messages, keep=2, kept_tools={"load_skill"})

    assert replaced == 2
    assert outputs(messages) == [
        "# Skill: pdf-extract",
        "[output of read_file",
        "[output of read_file",
        "figure figure figure",
        "figure figure figure",
    ]
    # Each call keeps its result, so the model still sees what it did.
    assert [len(m.content) for m in messages] == [1, 1] + [1] * 10


async def test_over_the_budget_the_older_rounds_become_a_summary(tokens: TokenCounter) -> None:
    def summarise(request: ModelRequest) -> str:
        assert request.tools == []
        assert "read_file answered" in request.messages[1].text_content()
        return "Report 1 says 3 %; report 2 says 5 %."

    model = ScriptedModel(summarise)
    compactor = Compactor(model, tokens, keep=10, budget=1500, kept_tools={"load_skill"})
    messages = conversation(rounds=4)

    await compactor.before_reasoning(TURN, messages)

    assert tokens.count_messages(messages) <= 1500
    assert messages[0].text_content() == "You work."
    summary = messages[1].text_content()
    assert summary.startswith(f"My request: {TURN.question}")
    assert "Report 1 says 3 %" in summary
    # The last two rounds are left as they were, calls and results paired.
    assert [m.role for m in messages[2:]] == ["assistant", "tool", "assistant", "tool"]
    assert [b.id for m in messages[2:] for b in m.tool_uses()] == ["call_3", "call_4"]
    usage = compactor.take_usage(TURN)
    assert usage.prompt_tokens > 0
    assert usage.completion_tokens > 0
    assert compactor.take_usage(TURN).prompt_tokens == 0


async def test_a_failed_summary_falls_back_to_stubbing_everything(tokens: TokenCounter) -> None:
    def down(request: ModelRequest) -> str:
        raise ModelConnectionError("down")

    model = ScriptedModel(down, down, down, down)
    compactor = Compactor(model, tokens, keep=10, budget=1500, kept_tools={"load_skill"})
    messages = conversation(rounds=4)

    await compactor.before_reasoning(TURN, messages)

    assert len(messages) == 12
    assert outputs(messages)[1:] == ["[output of read_file"] * 4
