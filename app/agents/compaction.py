"""Keeping a long ReAct task inside the model's context: a hook run before each model call.

Two steps, cheapest first:

1. Tool outputs older than the most recent `keep` become a one-line stub
   (the call stays, so the model knows it made it and can make it again).
   Outputs of the tools named in `kept_tools` (a skill's instructions,
   which the model follows to the end) are never stubbed.
2. When the messages still count more than `budget` tokens (tiktoken), the
   older rounds are replaced by a summary the model writes of them; the
   system prompt, the request and the last rounds stay as they are.

A summary that fails (the model is down) is not fatal: every old output is
stubbed instead, and the loop goes on. A summary's tokens are the turn's
too: `take_usage()` hands them to the agent for the turn's usage.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection

from app.agents.turn import Turn
from app.core.messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from app.core.responses import ChatResponse, Retrying, Usage
from app.llm.base import ChatModel
from app.llm.errors import ModelError
from app.llm.tokens import TokenCounter

log = logging.getLogger(__name__)

KEPT_ROUNDS = 2
"""Rounds (an assistant message and its tool results) a summary leaves as they are."""
TRANSCRIPT_RESULT_CHARS = 2000
STUB = "[output of {name} removed to save context; call the tool again if you need it]"
SUMMARY_PROMPT = """Summarise the work below for the agent that did it, so it can go on without it.
Keep: the user's request and constraints, what was done and found (facts, numbers, file
names and paths in the workspace), decisions made, errors met, and what remains to do.
Be complete but brief; plain text or short Markdown lists."""


class Compactor:
    """A `ReActHook` that stubs old tool outputs and summarises when over the token budget."""

    def __init__(
        self,
        model: ChatModel,
        tokens: TokenCounter,
        keep: int,
        budget: int,
        kept_tools: Collection[str] = (),
        model_of: Callable[[Turn], ChatModel] | None = None,
    ) -> None:
        self._model = model
        self._model_of = model_of
        """The turn's own model, when it may name one; else `model` summarises."""
        self._tokens = tokens
        self._keep = keep
        self._budget = budget
        self._kept_tools = frozenset(kept_tools)
        self._usage: dict[str, Usage] = {}
        """Summaries' usage by task, until the agent takes it."""

    def take_usage(self, turn: Turn) -> Usage:
        return self._usage.pop(turn.task_id, Usage())

    async def before_reasoning(self, turn: Turn, messages: list[Msg]) -> bool:
        stub_old_results(messages, self._keep, self._kept_tools)
        if self._tokens.count_messages(messages) > self._budget:
            await self._summarise(turn, messages)
        return False

    async def after_reasoning(self, turn: Turn, response: ChatResponse) -> bool:
        return False

    async def before_acting(self, turn: Turn, calls: list[ToolUseBlock]) -> bool:
        return False

    async def after_acting(self, turn: Turn, results: list[ToolResultBlock]) -> bool:
        return False

    async def _summarise(self, turn: Turn, messages: list[Msg]) -> None:
        starts = [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]
        if len(starts) <= KEPT_ROUNDS:
            return
        cut = starts[-KEPT_ROUNDS]
        older = messages[1:cut]
        request = [
            Msg.text("system", SUMMARY_PROMPT),
            Msg.text("user", transcript(older)),
        ]
        pieces: list[str] = []

        def count(usage: Usage) -> None:
            self._usage[turn.task_id] = self.take_usage(turn) + usage

        model = self._model_of(turn) if self._model_of is not None else self._model
        try:
            async for item in model.stream(request, on_usage=count):
                if not isinstance(item, Retrying):
                    pieces += [b.text for b in item.content if isinstance(b, TextBlock)]
        except ModelError as exc:
            log.warning("could not summarise the context (%s): stubbing every old output", exc)
            stub_old_results(messages, 0, self._kept_tools)
            return
        messages[1:cut] = [
            Msg.text(
                "user",
                f"My request: {turn.question}\n\n"
                "(Your earlier work on it, summarised to fit the context:)\n"
                + "".join(pieces).strip(),
            )
        ]


def stub_old_results(messages: list[Msg], keep: int, kept_tools: Collection[str]) -> int:
    """Replace all but the last `keep` tool outputs with stubs; how many were replaced."""
    results = [
        block
        for message in messages
        for block in message.content
        if isinstance(block, ToolResultBlock) and block.name not in kept_tools
    ]
    replaced = 0
    for block in results[: max(0, len(results) - keep)]:
        stub = STUB.format(name=block.name)
        if len(block.output) > len(stub):
            block.output = stub
            replaced += 1
    return replaced


def transcript(messages: list[Msg]) -> str:
    """Messages as plain text, for a model to summarise (no tool call left to pair)."""
    lines: list[str] = []
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.strip():
                lines.append(f"{message.role}: {block.text}")
            elif isinstance(block, ToolUseBlock):
                lines.append(
                    f"{message.role} called {block.name}: {block.raw_input or block.input}"
                )
            elif isinstance(block, ToolResultBlock):
                lines.append(f"{block.name} answered: {block.output[:TRANSCRIPT_RESULT_CHARS]}")
    return "\n".join(lines)
