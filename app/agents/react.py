"""The ReAct loop (seed 001's ReActAgent): reason with the model, act with tools, repeat.

Each round streams the model, forwarding thinking and text deltas as they
come; the round's tool calls then run concurrently, their events interleaved
as they happen and their results handed back in call order. After
`max_rounds` rounds one last call is made without tools, so the user always
gets an answer. A tool that raises becomes an error result the model can
read, not a crash. Hooks observe each phase and may end the loop early.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

import orjson

from app.agents.approvals import new_approval_id
from app.agents.base import BaseAgent
from app.agents.picture import attached_picture
from app.agents.recall import context_prompt, context_tools
from app.agents.tool_history import arguments_of, continued, replay
from app.agents.turn import AgentCore, AgentFailure, Turn, TurnState
from app.core.events import (
    ApprovalEvent,
    ErrorEvent,
    Event,
    TextEvent,
    ThinkingEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from app.core.messages import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from app.core.responses import Accumulator, ChatResponse, Retrying
from app.llm.errors import user_message
from app.store.records import Pending, ToolCall
from app.tools.base import Announced, Tool, ToolContext, ToolOutput

log = logging.getLogger(__name__)

FINAL_ROUND_NOTE = (
    "You have used all your tool rounds. Answer the user now with what you have found."
)


class ReActHook(Protocol):
    """Observes the loop. Returning True from a hook ends the loop after that phase."""

    async def before_reasoning(self, turn: Turn, messages: list[Msg]) -> bool: ...

    async def after_reasoning(self, turn: Turn, response: ChatResponse) -> bool: ...

    async def before_acting(self, turn: Turn, calls: list[ToolUseBlock]) -> bool: ...

    async def after_acting(self, turn: Turn, results: list[ToolResultBlock]) -> bool: ...


class ReActAgent(BaseAgent):
    carries_on = True
    overlaps = True
    hooks: Sequence[ReActHook] = ()
    reads_pictures: bool = False
    """Whether a picture the turn attaches (`fileId`) joins its question (agents/picture.py);
    another file is not read, and the user is told so."""

    def system_prompt(self, turn: Turn) -> str:
        return "You are a helpful assistant."

    def tools(self, turn: Turn) -> Sequence[Tool]:
        return ()

    def notices(self, turn: Turn) -> list[str]:
        """Thinking notes shown before the loop starts (e.g. a tool that is unavailable)."""
        return []

    def allowed(self, turn: Turn, state: TurnState) -> set[str] | None:
        """The acting tools this turn may run without asking; None: the policy alone decides."""
        return None

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        carried = turn.carried is not None  # its notes were shown where it began
        for note in () if carried else self.notices(turn):
            yield ThinkingEvent(note)
        picture = None
        if self.reads_pictures:
            picture = await attached_picture(self.core, turn, pictures_only=True)
        if picture is not None and picture.notice and not carried:
            yield ThinkingEvent(picture.notice)
        question = picture.question(turn.question) if picture is not None else None
        tools = {tool.schema.name: tool for tool in self.tools(turn)}
        messages = self.first_messages(turn, state, question)
        async for event in self.loop(turn, state, tools, messages):
            yield event

    def first_messages(
        self, turn: Turn, state: TurnState, question: Msg | None = None
    ) -> list[Msg]:
        """The system prompt, the conversation so far, and the question (`question`: the
        question with its picture)."""
        return [
            Msg.text("system", self.system_prompt(turn) + context_prompt(turn, state)),
            *state.memory,
            question or Msg.text("user", turn.question),
        ]

    async def loop(
        self, turn: Turn, state: TurnState, tools: dict[str, Tool], messages: list[Msg]
    ) -> AsyncIterator[Event]:
        """Reason and act from `messages` until the model answers without tool calls.

        The MCP tools configured for this agent kind join `tools` as the servers are now, and
        the tools the turn's project and memory give (agents/recall.py). A turn carried on
        from another instance goes on from its calls and answer so far.
        """
        if self.core.mcp is not None:
            tools = {t.schema.name: t for t in self.core.mcp.tools_for(self.agent_type)} | tools
        tools = dict(tools)
        for tool in context_tools(self.core, turn, state):
            tools.setdefault(tool.schema.name, tool)
        if turn.carried is not None:
            messages.extend(continued(list(state.tool_calls), "".join(state.answer)))
        if turn.resumed is not None:
            async for event in self._go_on(turn, state, tools, messages):
                yield event
            if state.outcome == "paused":
                return
        max_rounds = self.core.limits.max_rounds
        for round_no in range(max_rounds + 1):
            final = round_no == max_rounds or not tools
            if round_no == max_rounds and tools:
                messages.append(Msg.text("user", FINAL_ROUND_NOTE))
            if await self._hook("before_reasoning", turn, messages):
                return
            merged = Accumulator()
            schemas = [] if final else [t.schema for t in tools.values()]
            model = self.core.model_for(turn.model_id)
            stream = model.stream(messages, schemas, turn.options, state.add_usage)
            async for item in stream:
                if isinstance(item, Retrying):
                    yield retry_notice(item)
                    continue
                merged.add(item)
                for block in item.content:
                    if isinstance(block, TextBlock):
                        yield TextEvent(block.text)
                    elif isinstance(block, ThinkingBlock) and block.thinking:
                        # A signature arrives as a thinking block without text: nothing to show.
                        yield ThinkingEvent(block.thinking)
            response = merged.result()
            calls = [b for b in response.content if isinstance(b, ToolUseBlock)]
            messages.append(Msg("assistant", response.content))
            if await self._hook("after_reasoning", turn, response) or not calls or final:
                return
            if await self._hook("before_acting", turn, calls):
                return
            results: list[ToolResultBlock] = []
            async for event in self._act_asking(turn, state, tools, calls, results):
                yield event
            if state.outcome == "paused":
                return
            messages.append(Msg("tool", list(results)))
            if await self._hook("after_acting", turn, results):
                return

    async def _act_asking(
        self,
        turn: Turn,
        state: TurnState,
        tools: dict[str, Tool],
        calls: list[ToolUseBlock],
        results: list[ToolResultBlock],
    ) -> AsyncIterator[Event]:
        """`act()`, up to the first call that waits for the user's yes; there the turn pauses.

        The pending call (and the round's calls after it) is stored with the turn,
        `paused`, before the `approval` event is sent: nothing of it has run, and a
        crash after the store loses nothing.
        """
        allowed = self.allowed(turn, state)
        policy = self.core.approvals
        asking = next(
            (
                index
                for index, call in enumerate(calls)
                if policy.asks(call.name, tools.get(call.name), turn.tool_approval, allowed)
            ),
            None,
        )
        running = calls if asking is None else calls[:asking]
        if running:
            async for event in act(self.core, turn, state, tools, running, results):
                yield event
        if asking is None:
            return
        call, later = calls[asking], calls[asking + 1 :]
        approval_id = new_approval_id()
        pending = Pending(
            approval_id=approval_id,
            kind="tool",
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=call.input,
            later=[ToolCall(id=c.id, name=c.name, arguments=_arguments(c)) for c in later],
            tool_approval=turn.tool_approval,
        )
        state.pending = [pending]
        state.pause()
        if not await self.store(turn, state, "paused", None, lambda: None):
            raise AgentFailure("STORE_FAILED", "the pending tool call could not be stored")
        yield ApprovalEvent(
            approval_id,
            "tool",
            call.input,
            tool_call_id=call.id,
            tool_name=call.name,
        )

    async def _go_on(
        self, turn: Turn, state: TurnState, tools: dict[str, Tool], messages: list[Msg]
    ) -> AsyncIterator[Event]:
        """A paused turn, decided: its calls so far, then the rest of the paused round.

        The decided call runs as asked (`approve`), with the user's arguments
        (`edit`), or not at all (`reject`: the model reads that the user declined);
        the round's later calls are checked as any call is, and may pause again.
        """
        paused, answer = turn.resumed, turn.answer
        if paused is None or answer is None or not paused.pending:
            return
        pending = paused.pending[0]
        messages.extend(replay(list(state.tool_calls)))
        arguments = answer.arguments if answer.decision == "edit" else None
        decided = ToolUseBlock(
            pending.tool_call_id or "",
            pending.tool_name or "",
            arguments if arguments is not None else pending.arguments,
        )
        later = [
            ToolUseBlock(c.id, c.name, arguments_of(c), raw_input=c.arguments)
            for c in pending.later
        ]
        messages.append(Msg("assistant", [decided, *later]))
        results: list[ToolResultBlock] = []
        if answer.decision == "reject":
            text = answer.declined()
            yield ToolStartEvent(decided.name, decided.id, _arguments(decided))
            yield ToolEndEvent(decided.name, decided.id, text, True)
            results.append(ToolResultBlock(decided.id, decided.name, text, True))
        else:
            async for event in act(self.core, turn, state, tools, [decided], results):
                yield event
        async for event in self._act_asking(turn, state, tools, later, results):
            yield event
        messages.append(Msg("tool", list(results)))

    async def _hook(self, phase: str, turn: Turn, payload: Any) -> bool:
        stop = False
        for hook in self.hooks:
            stop = bool(await getattr(hook, phase)(turn, payload)) or stop
        return stop


async def act(
    core: AgentCore,
    turn: Turn,
    state: TurnState,
    tools: dict[str, Tool],
    calls: list[ToolUseBlock],
    results: list[ToolResultBlock],
) -> AsyncIterator[Event]:
    """Run the calls concurrently, yielding their events as they happen: every agent's tool calls.

    Each call shows as its notice (if the tool gives one), `tool_start` and `tool_end`,
    is counted by the telemetry, and adds its references to the turn. `results` is
    filled in call order. If the loop is stopped, the calls still running are
    cancelled before this generator lets go.

    A call runs only once its `tool_start` is durable (`StopSignal.durable`): should
    the instance die while it runs, the instance that carries the turn on knows of it,
    and tells the model its outcome is unknown rather than run it a second time.
    """
    queue: asyncio.Queue[Event | asyncio.Future[None] | None] = asyncio.Queue()
    outputs: list[ToolOutput] = [ToolOutput("") for _ in calls]
    ctx = ToolContext(turn.user_id, turn.conversation_id, queue.put_nowait)
    limit = core.limits.tool_result_display_chars

    async def call_one(index: int, call: ToolUseBlock) -> None:
        tool = tools.get(call.name)
        try:
            note = tool.notice(call.input) if isinstance(tool, Announced) else None
            if note:
                queue.put_nowait(ThinkingEvent(note))
            queue.put_nowait(ToolStartEvent(call.name, call.id, _arguments(call)))
            announced: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            queue.put_nowait(announced)
            await announced
            with core.observer.tool_call(call.name, call.id) as ended:
                outputs[index] = await _invoke(tool, call.name, call.input, ctx)
                ended(outputs[index].is_error)
            out = outputs[index]
            queue.put_nowait(ToolEndEvent(call.name, call.id, out.text[:limit], out.is_error))
        finally:
            queue.put_nowait(None)

    running = [asyncio.create_task(call_one(i, c)) for i, c in enumerate(calls)]
    try:
        remaining = len(running)
        while remaining:
            item = await queue.get()
            if item is None:
                remaining -= 1
            elif isinstance(item, asyncio.Future):
                await state.stop.durable()  # its `tool_start`, yielded just before
                if not item.done():
                    item.set_result(None)
            else:
                yield item
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    for call, out in zip(calls, outputs, strict=True):
        state.add_references(out.references)
        results.append(ToolResultBlock(call.id, call.name, out.text, out.is_error))


def retry_notice(item: Retrying) -> ErrorEvent:
    """The `error{code: RETRYING}` a stream shows while a failed model call is tried again."""
    return ErrorEvent(
        "RETRYING",
        user_message("RETRYING"),
        f"attempt {item.attempt + 1} in {item.delay:.1f}s ({item.reason})",
    )


async def _invoke(
    tool: Tool | None, name: str, args: dict[str, Any], ctx: ToolContext
) -> ToolOutput:
    if tool is None:
        return ToolOutput(f"There is no tool named {name!r}.", is_error=True)
    try:
        return await tool(args, ctx)
    except Exception as exc:
        log.warning("tool %s raised %s", name, type(exc).__name__, exc_info=True)
        return ToolOutput(f"The tool failed: {type(exc).__name__}: {exc}", is_error=True)


def _arguments(call: ToolUseBlock) -> str:
    return call.raw_input or orjson.dumps(call.input).decode()
