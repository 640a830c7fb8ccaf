"""Which id a call goes back to its provider under: the provider's own only where it is safe."""

from __future__ import annotations

from app.core.messages import Msg, ToolResultBlock, ToolUseBlock
from app.llm.toolcalls import with_provider_ids


def called(ours: str, provider: str | None) -> list[Msg]:
    """One round: the call, and its result under our id."""
    return [
        Msg("assistant", [ToolUseBlock(ours, "web_search", {}, provider_id=provider)]),
        Msg("tool", [ToolResultBlock(ours, "web_search", "found")]),
    ]


def sent_ids(messages: list[Msg]) -> list[tuple[str, str]]:
    """(call id, its result's id) per round, as the provider is sent them."""
    sent = with_provider_ids(messages)
    uses = [b.id for m in sent for b in m.content if isinstance(b, ToolUseBlock)]
    results = [b.tool_use_id for m in sent for b in m.content if isinstance(b, ToolResultBlock)]
    return list(zip(uses, results, strict=True))


def test_a_provider_id_naming_one_call_goes_back_with_its_result() -> None:
    assert sent_ids(called("call_ours1", "toolu_01")) == [("toolu_01", "toolu_01")]


def test_an_id_the_provider_gave_twice_or_not_at_all_leaves_ours() -> None:
    messages = [
        *called("call_ours1", "call_0"),
        *called("call_ours2", "call_0"),
        *called("call_ours3", None),
    ]
    assert sent_ids(messages) == [
        ("call_ours1", "call_ours1"),
        ("call_ours2", "call_ours2"),
        ("call_ours3", "call_ours3"),
    ]


def test_a_provider_id_that_is_another_calls_id_leaves_ours() -> None:
    """A stored turn's call replays under the id it was stored with, maybe the same text."""
    messages = [*called("call_1", None), *called("call_ours2", "call_1")]
    assert sent_ids(messages) == [("call_1", "call_1"), ("call_ours2", "call_ours2")]
