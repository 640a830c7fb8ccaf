"""Model calls of the graph's own steps: plain text, streamed text, and validated JSON.

A structured answer comes from `app/llm/structured.py` (the provider's native
structured output, held to the step's own schema, the prompt form as the
fallback): what code can mend is mended (rules.py), and the thinking says
so; one that still does not fit is sent back to the model once, and a second
miss raises `ModelOutputInvalid`, which ends the turn `failed` with an
`error` naming the step, like any model error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from app.agents.react import retry_notice
from app.agents.turn import Turn, TurnState
from app.core.events import Event, TextEvent, ThinkingEvent
from app.core.messages import Msg, TextBlock, ThinkingBlock
from app.core.responses import Retrying
from app.llm.base import ChatModel
from app.llm.structured import Mend, structured

S = TypeVar("S", bound=BaseModel)
Emit = Callable[[Event], None]


@dataclass(slots=True)
class ModelSteps:
    """One turn's model, with where its usage is counted and its notices go."""

    model: ChatModel
    turn: Turn
    state: TurnState

    async def text(
        self,
        messages: list[Msg],
        emit: Emit,
        *,
        stream: bool = False,
        model: ChatModel | None = None,
    ) -> str:
        """The model's answer; with `stream`, each piece goes out as `text` as it comes.

        Only a streamed answer shows the model's reasoning (as `thinking`): the
        JSON steps' reasoning would bury the short progress lines.
        """
        pieces: list[str] = []
        chosen = model or self.model
        async for item in chosen.stream(messages, (), self.turn.options, self.state.add_usage):
            if isinstance(item, Retrying):
                emit(retry_notice(item))
                continue
            for block in item.content:
                if isinstance(block, TextBlock):
                    pieces.append(block.text)
                    if stream:
                        emit(TextEvent(block.text))
                elif stream and isinstance(block, ThinkingBlock) and block.thinking:
                    emit(ThinkingEvent(block.thinking))
        return "".join(pieces)

    async def structured(
        self,
        messages: list[Msg],
        shape: type[S],
        emit: Emit,
        *,
        step: str,
        schema: dict[str, Any] | None = None,
        mend: Mend[S] | None = None,
    ) -> S:
        """The answer validated as `shape` (held to `schema`, the shape's own by default)
        and mended, asking once more when it does not fit; `step` names it to the user."""
        return await structured(
            self.model,
            messages,
            shape,
            step=step,
            schema=schema,
            options=self.turn.options,
            on_usage=self.state.add_usage,
            on_retry=lambda item: emit(retry_notice(item)),
            mend=mend,
            on_mended=lambda notes: emit(ThinkingEvent("".join(f"Mended: {n}\n" for n in notes))),
        )
