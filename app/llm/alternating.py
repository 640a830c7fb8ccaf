"""Shape a message list for APIs that keep the system prompt apart and want turns to alternate.

Anthropic and Gemini take the system prompt as a field of its own, and expect
user and assistant (model) turns to alternate. Our lists do not always: tool
results travel as a `tool` message that these APIs count as a user turn, and
the ReAct loop may follow them with a user note. Joining consecutive turns of
one role keeps every block, in order, and what the model sees is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from app.core.messages import Msg

Part = TypeVar("Part")


def system_prompt(messages: Sequence[Msg]) -> str:
    """The text of every system message, in order, one paragraph each."""
    return "\n\n".join(m.text_content() for m in messages if m.role == "system")


def alternate(turns: Iterable[tuple[str, list[Part]]]) -> list[tuple[str, list[Part]]]:
    """Join consecutive turns of one role; drop turns left with nothing to send."""
    out: list[tuple[str, list[Part]]] = []
    for role, parts in turns:
        if not parts:
            continue
        if out and out[-1][0] == role:
            out[-1][1].extend(parts)
        else:
            out.append((role, list(parts)))
    return out
