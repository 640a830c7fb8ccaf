"""Shape a message list for APIs that keep the system prompt apart and want turns to alternate.

Anthropic and Gemini take the system prompt as a field of its own, and expect
user and assistant (model) turns to alternate. Our lists do not always: tool
results travel as a `tool` message that these APIs count as a user turn, and
the ReAct loop may follow them with a user note. Joining consecutive turns of
one role keeps every block, in order, and what the model sees is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from app.core.messages import Msg

Part = TypeVar("Part")


def system_prompt(messages: Sequence[Msg]) -> str:
    """The text of every system message, in order, one paragraph each."""
    return "\n\n".join(m.text_content() for m in messages if m.role == "system")


def turns(
    messages: Sequence[Msg], parts: Callable[[Msg], list[Part]], *, assistant: str
) -> list[tuple[str, list[Part]]]:
    """The messages but system ones as (role, parts) turns that alternate.

    The model's messages take the role `assistant` names; every other one
    (user, tool results) is a `user` turn. Consecutive turns of one role are
    joined, and turns left with nothing to send are dropped.
    """
    out: list[tuple[str, list[Part]]] = []
    for msg in messages:
        if msg.role == "system":
            continue
        role = assistant if msg.role == "assistant" else "user"
        content = parts(msg)
        if not content:
            continue
        if out and out[-1][0] == role:
            out[-1][1].extend(content)
        else:
            out.append((role, content))
    return out
