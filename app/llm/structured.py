"""The JSON answers of the agents' own steps: deep research's clarify, plan and critique,
the deck's steps, the follow-up questions. One helper for all of them.

A step asks for its shape with the provider's native structured output
(`ResponseFormat`, which each adapter sends its own way), since a server
holds an answer to a schema and a prompt only hopes for it. The schema is
the step's own for the request at hand where it has one (the template codes
there are, the slides asked for), so every rule JSON Schema can say is said
where the server holds the model to it; else the pydantic model's. The
prompt still says the shape with an example: that is the whole request
where the native mode is off (`LLM_STRUCTURED_OUTPUT=prompt`) or refused,
and the guide where the server holds the answer only to "a JSON object".

A server that refuses the native field (a 400 naming it) is asked again at
once without it, and the model remembers, so later steps go straight to the
prompt form. The answer is read leniently (a code fence, a sentence around
it, raw tabs in strings), validated by pydantic, mended by the step where
code can mend it without the model (`mend`: a deck one slide short of its
closing slide, a text a few characters over), and then checked (`check`).
What is still wrong is sent back once, and a second miss raises
`StructuredOutputInvalid`: it names the step in words the user reads, and
it is logged once, with the model, the problems and the answer's start.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.core.messages import Msg, TextBlock
from app.core.responses import Retrying
from app.core.tools import GenerateOptions, ResponseFormat
from app.llm.base import ChatModel, UsageSink
from app.llm.errors import ModelError, ModelOutputInvalid

log = logging.getLogger(__name__)

Shape = TypeVar("Shape", bound=BaseModel)
Mend = Callable[[Shape], tuple[Shape, list[str]]]
"""The answer as code mends it, and a note of each repair (for the turn's thinking)."""
MAX_PROBLEMS = 12
"""Problems told back to the model: enough to fix an answer, not a wall of text."""
AGAIN = """That answer cannot be used: {problems}
Answer again with the corrected JSON object only."""
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_STRAY_BACKSLASH = re.compile(r'\\(?!["\\/bfnrtu])')
LOGGED_ANSWER_CHARS = 300
REASON_CHARS = 200


class InvalidAnswer(Exception):
    """The answer is not what the step asked for; `str()` tells the model what to fix."""


class StructuredOutputInvalid(ModelOutputInvalid):
    """A step's answer was still unusable after it was asked again."""

    def __init__(self, step: str, shape: str, problems: list[str], answers: int) -> None:
        super().__init__(f"{shape}: {' '.join(problems[:MAX_PROBLEMS])}"[:300])
        self.step = step
        """The step as the user reads it ("Choosing the deck's template")."""
        self.problems = problems
        self.sentence = failed_step(step, problems, answers)

    @property
    def user_text(self) -> str:
        return self.sentence


def _model_label(model: ChatModel) -> str:
    """The model as the log names it: its catalog name, and what the provider calls it."""
    config = model.config
    return config.model if config.name in ("", config.model) else f"{config.name} ({config.model})"


def failed_step(step: str, problems: list[str], answers: int) -> str:
    """What the user reads: which step failed, and the first thing wrong with the answer."""
    again = ", even when asked again" if answers > 1 else ""
    reason = problems[0].strip().rstrip(".") if problems else "no answer"
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 1] + "…"
    more = f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
    return f"{step} failed: the model's answer could not be used{again} ({reason}{more})."


async def structured(
    model: ChatModel,
    messages: Sequence[Msg],
    shape: type[Shape],
    *,
    step: str = "",
    schema: dict[str, Any] | None = None,
    options: GenerateOptions | None = None,
    on_usage: UsageSink | None = None,
    on_text: Callable[[str], None] | None = None,
    on_retry: Callable[[Retrying], None] | None = None,
    mend: Mend[Shape] | None = None,
    on_mended: Callable[[list[str]], None] | None = None,
    check: Callable[[Shape], list[str]] | None = None,
    attempts: int = 2,
) -> Shape:
    """The model's answer as `shape`, mended, passing `check`, in at most `attempts` answers.

    `step` names the step as the user reads it ("Choosing the template");
    `schema` is the request's own JSON Schema (None: `shape`'s). `on_text`
    is told each piece of the answer as it comes, and "" when an answer
    starts (so a preview can start over); `on_retry` each `Retrying`;
    `on_mended` the repairs of the answer returned, when there were any.
    """
    asking = _Asking(model, options or {}, on_usage, on_text, on_retry)
    wanted = schema if schema is not None else shape.model_json_schema(by_alias=True)
    conversation = list(messages)
    value: Shape | None = None
    problems: list[str] = []
    text = ""
    for _ in range(attempts):
        text = await asking.answer(conversation, shape.__name__, wanted)
        notes: list[str] = []
        try:
            value = read_answer(text, shape)
            if mend is not None:
                value, notes = mend(value)
            problems = check(value) if check is not None else []
        except InvalidAnswer as exc:
            value, problems = None, [str(exc)]
        if not problems:
            assert value is not None
            if notes and on_mended is not None:
                on_mended(notes)
            return value
        again = AGAIN.format(problems=" ".join(problems[:MAX_PROBLEMS]))
        conversation += [Msg.text("assistant", text), Msg.text("user", again)]
    failed = StructuredOutputInvalid(
        step or f"The {shape.__name__} step", shape.__name__, problems, attempts
    )
    log.warning(
        "structured step %r failed on model %s after %d answers: %s; the last answer began %r",
        failed.step,
        _model_label(model),
        attempts,
        " ".join(problems[:MAX_PROBLEMS]),
        text[:LOGGED_ANSWER_CHARS],
    )
    raise failed


@dataclass(frozen=True, slots=True)
class _Asking:
    """One step's calls: the model, the caller's options, and where what comes goes."""

    model: ChatModel
    options: GenerateOptions
    on_usage: UsageSink | None
    on_text: Callable[[str], None] | None
    on_retry: Callable[[Retrying], None] | None

    async def answer(self, messages: list[Msg], name: str, schema: dict[str, Any]) -> str:
        """One answer's text, asked natively unless the model answers in the prompt's form."""
        mode = self.model.structured_output
        if mode != "prompt":
            native: GenerateOptions = {
                **self.options,
                "response_format": ResponseFormat(name, schema if mode == "json_schema" else None),
            }
            try:
                return await self._text(messages, native)
            except ModelError as exc:
                if not self.model.refused_structured_output(exc):
                    raise
        return await self._text(messages, self.options)

    async def _text(self, messages: list[Msg], options: GenerateOptions) -> str:
        if self.on_text is not None:
            self.on_text("")
        parts: list[str] = []
        async for item in self.model.stream(messages, (), options, self.on_usage):
            if isinstance(item, Retrying):
                if self.on_retry is not None:
                    self.on_retry(item)
                continue
            for block in item.content:
                if isinstance(block, TextBlock):
                    parts.append(block.text)
                    if self.on_text is not None:
                        self.on_text(block.text)
        return "".join(parts)


def parse_json(text: str) -> Any:
    """The JSON object in a model's answer, tolerant of the ways models wrap it."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise InvalidAnswer("The answer must be one JSON object.")
    candidate = body[start : end + 1]
    for attempt in (candidate, _STRAY_BACKSLASH.sub(r"\\\\", candidate)):
        try:
            # strict=False accepts raw tabs and newlines inside strings.
            return json.loads(attempt, strict=False)
        except json.JSONDecodeError:
            continue
    raise InvalidAnswer("The answer is not valid JSON.")


def read_answer(text: str, shape: type[Shape]) -> Shape:
    """`text` as `shape`; the validation errors, without the model's input echoed back."""
    try:
        return shape.model_validate(parse_json(text))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'answer'}: {error['msg']}"
            for error in exc.errors(include_input=False, include_url=False)[:8]
        )
        raise InvalidAnswer(f"The JSON does not match the format: {problems}.") from exc
