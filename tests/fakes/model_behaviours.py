"""How a model answers the agents: the behaviours the conformance tests meet.

A `Behaving` responder serves any vendor's fake. Its `answers` say what to
answer a request (JSON text for a JSON step; other text, or a whole `Reply`,
for the rest); its `Behaviour` says how a JSON answer goes out, seeing the
native structured output the request asked for as that vendor's fake read it
(`ScriptedServer.requested`), and how the server names its tool calls
(`call_ids`, set on the server the responder serves). The behaviours are the
ones met in the field:

- `NativeOnly`: holds to the schema only when asked natively, as a server
  does (the answer is checked against the schema sent); asked in the prompt
  alone it answers an object of the wrong shape.
- `IgnoresNative`: answers in text whatever it was asked, as a model that
  ignores `response_format` or Anthropic's `tool_choice` does.
- `Fenced`, `InASentence`: the JSON wrapped in a code fence, or in prose.
- `InvalidOnce`: cut-off JSON the first time, right the second.
- `Reasoning`: reasoning first, in the vendor's channel (`reasoning_content`,
  thinking blocks, thought parts); `ThinkTags`: in `<think>` tags in the text.
- `ParallelCalls`: a tool call beside the answer, which no step asked for.
- `NamesCalls`: tool calls named as servers in the field name them
  (`CallIds`): `reused-ids`, every response numbering its calls `call_1`,
  `call_2`, ... again, as local servers do; `repeated-ids`, one id for all
  the calls of a response; `missing-ids`, no id, as Gemini sends them.
- `SchemaOnly`: holds to the schema it is sent and to nothing else: every JSON
  step gets the least instance of the schema (tests/fakes/schema_instances.py),
  whatever the prompt asked, so a rule the step checks but its schema leaves
  out shows up as a failure; with no schema sent, `{}`. It alone does not
  send the answer the test scripted (`keeps_answer`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar

import jsonschema_rs
import orjson

from tests.fakes.schema_instances import schema_instance
from tests.fakes.scripted_server import Body, CallIds, Reply, Requested, ScriptedServer

Answers = Callable[[ScriptedServer, Body], "str | Reply"]
WRONG_SHAPE = '{"answer": "Here is what I think."}'
CUT_OFF = '{"tasks": [{"id": "1", "title": '
STRAY_CALL = ("web_search", {"query": "something else"})


class Behaviour(ABC):
    call_ids: CallIds = "unique"
    """How the server names its tool calls while this behaviour answers."""
    keeps_answer: ClassVar[bool] = True
    """Whether the JSON answer the test scripted goes out, in some form."""

    @abstractmethod
    def reply(self, answer: str, requested: Requested | None) -> Reply:
        """How the JSON `answer` goes out, for a request asking natively for `requested`."""


def native(answer: str, requested: Requested | None, reasoning: str | None = None) -> Reply:
    """The answer the native way when asked so, else as text."""
    if requested is None:
        return Reply.text(answer, reasoning=reasoning)
    return Reply.structured(answer, reasoning=reasoning)


class NativeOnly(Behaviour):
    def reply(self, answer: str, requested: Requested | None) -> Reply:
        if requested is None:
            return Reply.text(WRONG_SHAPE)
        if requested.schema is not None:
            errors = [
                e.message
                for e in jsonschema_rs.validator_for(requested.schema).iter_errors(
                    orjson.loads(answer)
                )
            ]
            if errors:
                # A server holding the answer to the schema could not have written it.
                return Reply.error(400, message=f"fake: answer outside the schema: {errors[:3]}")
        return Reply.structured(answer)


class IgnoresNative(Behaviour):
    def reply(self, answer: str, requested: Requested | None) -> Reply:
        return Reply.text(answer)


class Fenced(Behaviour):
    def reply(self, answer: str, requested: Requested | None) -> Reply:
        return Reply.text(f"Here you go:\n```json\n{answer}\n```\nAnything else?")


class InASentence(Behaviour):
    def reply(self, answer: str, requested: Requested | None) -> Reply:
        return Reply.text(f"Sure, the answer is {answer} as asked.")


@dataclass
class InvalidOnce(Behaviour):
    broken: int = 0

    def reply(self, answer: str, requested: Requested | None) -> Reply:
        if self.broken == 0:
            self.broken += 1
            return Reply.text(CUT_OFF)
        return native(answer, requested)


class Reasoning(Behaviour):
    def reply(self, answer: str, requested: Requested | None) -> Reply:
        return native(answer, requested, reasoning="First I weigh what was asked.")


class ThinkTags(Behaviour):
    def reply(self, answer: str, requested: Requested | None) -> Reply:
        return Reply.text(f"<think>The user wants JSON {{like this}}.</think>{answer}")


class ParallelCalls(Behaviour):
    def reply(self, answer: str, requested: Requested | None) -> Reply:
        if requested is None:
            return Reply.tool_calls([STRAY_CALL], text=answer)
        return Reply.structured(answer, extra_calls=[STRAY_CALL])


@dataclass
class NamesCalls(Behaviour):
    """JSON the native way; the tool calls named as `call_ids` says."""

    call_ids: CallIds

    def reply(self, answer: str, requested: Requested | None) -> Reply:
        return native(answer, requested)


@dataclass
class SchemaOnly(Behaviour):
    keeps_answer: ClassVar[bool] = False
    pick: int = 0
    """Which value the first choice of each answer takes (an enum's, by turns after it)."""

    def reply(self, answer: str, requested: Requested | None) -> Reply:
        if requested is None:
            return Reply.text("{}")
        if requested.schema is None:
            return Reply.structured("{}")
        return Reply.structured(orjson.dumps(schema_instance(requested.schema, self.pick)).decode())


BEHAVIOURS: dict[str, Callable[[], Behaviour]] = {
    "native-only": NativeOnly,
    "ignores-native": IgnoresNative,
    "fenced": Fenced,
    "in-a-sentence": InASentence,
    "invalid-once": InvalidOnce,
    "reasoning": Reasoning,
    "think-tags": ThinkTags,
    "parallel-calls": ParallelCalls,
    "reused-ids": partial(NamesCalls, "reused"),
    "repeated-ids": partial(NamesCalls, "repeated"),
    "missing-ids": partial(NamesCalls, "missing"),
    "schema-only": SchemaOnly,
}
ANSWER_KEEPING = {name: make for name, make in BEHAVIOURS.items() if make().keeps_answer}
"""The behaviours whose answers carry what the test scripted, in some form."""


@dataclass
class Behaving:
    """A responder for `server`: `answers` say what, `behaviour` how JSON goes out."""

    server: ScriptedServer
    answers: Answers
    behaviour: Behaviour
    asked: list[Requested | None] = field(default_factory=list)
    """What each JSON step asked natively for, in order (None: the prompt alone)."""

    def __post_init__(self) -> None:
        self.server.call_ids = self.behaviour.call_ids

    def __call__(self, body: Body) -> Reply:
        answer = self.answers(self.server, body)
        if isinstance(answer, Reply):
            return answer
        if not answer.lstrip().startswith("{"):
            return Reply.text(answer)
        requested = self.server.requested(body)
        self.asked.append(requested)
        return self.behaviour.reply(answer, requested)
