"""Model calls of the graph's own steps: plain text, streamed text, and validated JSON.

A structured answer comes from `app/llm/structured.py` (the provider's native
structured output, the prompt form as the fallback): one that does not
validate is sent back to the model once, and a second miss raises
`ModelOutputInvalid`, which ends the turn `failed` with an `error` event
like any model error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from app.agents.react import retry_notice
from app.agents.turn import Turn, TurnState
from app.core.events import Event, TextEvent, ThinkingEvent
from app.core.messages import Msg, TextBlock, ThinkingBlock
from app.core.responses import Retrying
from app.llm.base import ChatModel
from app.llm.structured import structured

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

    async def structured(self, messages: list[Msg], schema: type[S], emit: Emit) -> S:
        """The answer validated as `schema`, asking once more when it does not fit."""
        return await structured(
            self.model,
            messages,
            schema,
            options=self.turn.options,
            on_usage=self.state.add_usage,
            on_retry=lambda item: emit(retry_notice(item)),
        )
