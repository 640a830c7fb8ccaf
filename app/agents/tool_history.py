"""A turn's tool calls as stored, and as replayed to the model in later turns (and in the
same turn, carried on by another instance).

A stored call is a `ToolCall` record. A call cut short
(a stop, a crash, a failure mid-call) has no result yet, and replayed like
that it would be a tool call without its answer, which every provider
rejects. `closed()` gives such calls a synthetic result saying they were
interrupted: the stored turn gets it when the run ends (and in its periodic
partial saves, so a crash leaves it too), and `replay()` applies it again to
any record that still lacks one.

Replayed, a turn's calls become one assistant message of tool uses and one
message of their results, placed between the question and the answer: the
shape every provider accepts (OpenAI `tool_calls` + `tool` messages,
Anthropic `tool_use` + `tool_result`, Gemini function call + response).
Results are replayed as stored, that is cut to the display length.

A turn carried on from another instance (`continued`) is replayed the same
way, its answer so far after its calls, then asked to go on without
repeating itself: the model continues the answer rather than starting over.
"""

from __future__ import annotations

from typing import Any

import orjson

from app.core.messages import Msg, ToolResultBlock, ToolUseBlock
from app.store.records import ToolCall

INTERRUPTED_RESULT = "Interrupted: the tool call did not finish."
CUT_SHORT_RESULT = (
    "Cut short: the service moved this conversation to another server while the call ran."
    " Whether it took effect is unknown; check before running it again."
)
"""The result of a call in flight when its turn moved to another instance: it is not run again."""
CONTINUE_NOTE = (
    "Your answer above was cut off when this conversation moved to another server. Continue it"
    " exactly where it stops: do not repeat anything already written, and do not mention the"
    " interruption."
)


def closed(calls: list[ToolCall]) -> list[ToolCall]:
    """The calls, each with a result: the synthetic, failed one where it was missing."""
    return [
        call
        if call.result is not None
        else call.model_copy(update={"result": INTERRUPTED_RESULT, "is_error": True})
        for call in calls
    ]


def replay(calls: list[ToolCall]) -> list[Msg]:
    """The calls as messages (none when there were none)."""
    if not calls:
        return []
    uses: list[ToolUseBlock] = []
    results: list[ToolResultBlock] = []
    for call in closed(calls):
        arguments = call.arguments or "{}"
        uses.append(ToolUseBlock(call.id, call.name, _input(arguments), raw_input=arguments))
        results.append(ToolResultBlock(call.id, call.name, call.result or "", call.is_error))
    return [Msg("assistant", list(uses)), Msg("tool", list(results))]


def continued(calls: list[ToolCall], answer: str) -> list[Msg]:
    """A turn carried on from another instance: its calls so far, its answer so far, and the
    request to go on from there (none when it had not begun answering)."""
    messages = replay(calls)
    if answer:
        messages += [Msg.text("assistant", answer), Msg.text("user", CONTINUE_NOTE)]
    return messages


def text_of(calls: list[ToolCall]) -> list[str]:
    """The parts of the calls a model reads, for counting their tokens."""
    return [part for call in closed(calls) for part in (call.arguments, call.result or "")]


def arguments_of(call: ToolCall) -> dict[str, Any]:
    """A stored call's arguments as an object (empty when the model's JSON was not one)."""
    return _input(call.arguments or "{}")


def _input(arguments: str) -> dict[str, Any]:
    """The arguments as an object; a model's malformed JSON is kept only as the raw text."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
