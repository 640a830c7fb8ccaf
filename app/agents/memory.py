"""A conversation's memory: its latest turns, as messages, cut to a token budget.

The window keeps whole turns (question, tool calls and answer together),
newest first, until the budget counted with tiktoken is spent; a model never
sees half a turn. A turn's tool calls are replayed between its question and
its answer (see `tool_history`), calls cut short closed with a synthetic
result. Turns with neither answer text nor tool calls are left out; a turn
with calls but no text (a call the user declined with a message) is its
question and its calls. Earlier turns left `running` by an instance that
died are marked `interrupted` here, by whichever instance next touches the
conversation: only those turns, and only while no instance took them over
(never the turn that reads them, nor one carried on elsewhere).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.agents.tool_history import replay, text_of
from app.core.messages import Msg
from app.llm.tokens import TokenCounter
from app.store.base import TurnStore
from app.store.models import StoredTurn

TURN_OVERHEAD_TOKENS = 8
"""Role and separator tokens of the two messages of a turn."""


async def load_memory(
    store: TurnStore,
    tokens: TokenCounter,
    turns: Sequence[StoredTurn],
    max_tokens: int,
) -> list[Msg]:
    """The window of `turns`, the conversation's latest (read with the question's insert)."""
    running = [t for t in turns if t.status == "running"]
    if running:
        await store.interrupt_turns(running)
    return window(turns, tokens, max_tokens)


def window(turns: Sequence[StoredTurn], tokens: TokenCounter, budget: int) -> list[Msg]:
    """The newest whole turns that fit in `budget` tokens, oldest first."""
    picked: list[StoredTurn] = []
    used = 0
    for turn in reversed(turns):
        if not turn.answer and not turn.tools:
            continue
        parts = [turn.question, turn.answer or "", *text_of(turn.tools)]
        cost = sum(map(tokens.count, parts)) + TURN_OVERHEAD_TOKENS
        if used + cost > budget:
            break
        picked.append(turn)
        used += cost
    messages: list[Msg] = []
    for turn in reversed(picked):
        messages.append(Msg.text("user", turn.question))
        messages.extend(replay(turn.tools))
        if turn.answer:
            messages.append(Msg.text("assistant", turn.answer))
    return messages
