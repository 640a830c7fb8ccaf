"""Model calls of the graph's own steps: plain text, streamed text, and validated JSON.

A structured answer that does not validate is sent back to the model once,
with the validation error; a second miss raises `ModelOutputInvalid`, which
ends the turn `failed` with an `error` event like any model error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from app.agents.base import Turn, TurnState
from app.agents.deep.prompts import INVALID
from app.agents.react import retry_notice
from app.core.events import Event, TextEvent, ThinkingEvent
from app.core.messages import Msg, TextBlock, ThinkingBlock
from app.core.responses import Retrying
from app.llm.base import ChatModel
from app.llm.errors import ModelOutputInvalid

S = TypeVar("S", bound=BaseModel)
Emit = Callable[[Event], None]


@dataclass(slots=True)
class ModelSteps:
    """One turn's model, with where its usage is counted and its notices go."""

    model: ChatModel
    turn: Turn
    state: TurnState

    async def text(self, messages: list[Msg], emit: Emit, *, stream: bool = False) -> str:
        """The model's answer; with `stream`, each piece goes out as `text` as it comes.

        Only a streamed answer shows the model's reasoning (as `thinking`): the
        JSON steps' reasoning would bury the short progress lines.
        """
        pieces: list[str] = []
        async for item in self.model.stream(messages, (), self.turn.options):
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
            if item.usage is not None:
                self.state.usage = self.state.usage + item.usage
        return "".join(pieces)

    async def structured(self, messages: list[Msg], schema: type[S], emit: Emit) -> S:
        """The answer validated as `schema`, asking once more when it does not fit."""
        for attempt in (1, 2):
            answer = await self.text(messages, emit)
            try:
                return schema.model_validate_json(_json_part(answer))
            except ValidationError as exc:
                error = _describe(exc)
                if attempt == 2:
                    raise ModelOutputInvalid(f"{schema.__name__}: {error}") from exc
                messages = [
                    *messages,
                    Msg.text("assistant", answer),
                    Msg.text("user", INVALID.format(error=error)),
                ]
        raise AssertionError("unreachable")


def _json_part(answer: str) -> str:
    """The JSON object in an answer that may wrap it in a code fence or a sentence."""
    start, end = answer.find("{"), answer.rfind("}")
    return answer[start : end + 1] if 0 <= start < end else answer


def _describe(exc: ValidationError) -> str:
    """The validation errors in a line each, without echoing the model's input back."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}"
        for err in exc.errors(include_input=False, include_url=False)
    )
