"""`Telemetry`: the one object behind every hook the service offers its observers.

It counts (Prometheus, always) and, when the app has a tracer, makes spans
named and attributed by OpenTelemetry's GenAI semantic conventions:

    {METHOD} {route}             the HTTP request (middleware.py)
    └── invoke_agent {kind}      the run, though it goes on in a background task
        ├── chat {model}         each model call (each attempt of one)
        ├── execute_tool {name}  each tool call
        ├── SELECT / INSERT ...  each SQL statement (stores.py)
        └── tasks.refresh ...    each call to the Redis task backend (stores.py)

The run's span is made current while the run's task is created, so the task
inherits it (asyncio copies the context at `create_task`) and everything the
run does nests under it; it ends when that task is done. Without a tracer no
span object is made: each hook takes a branch that only counts.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Iterator

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, use_span

from app.agents.turn import Turn
from app.core.events import Event, RunStatus
from app.core.observe import ToolEnded
from app.core.responses import Usage
from app.core.run import Conclusion, Notice, StopSignal
from app.llm.base import ChatModel, LoggingObserver, ModelCallWatch, ModelObserver
from app.service.turns import Launch
from app.tasks.runs import Run, RunProgram
from app.telemetry.metrics import Metrics
from app.telemetry.tracing import current_trace_id

PROVIDER_NAMES = {"gemini": "gcp.gemini"}
"""Our provider names where the GenAI conventions' `gen_ai.provider.name` differs."""


class Telemetry:
    """Implements `AgentObserver`, `ModelObserver` and `RunObserver` on one set of metrics."""

    def __init__(self, metrics: Metrics, tracer: Tracer | None) -> None:
        self.metrics = metrics
        self.tracer = tracer
        self._model_observer: ModelObserver = LoggingObserver()
        """The model's own hook (its debug log), still told of every call."""

    def watch_model(self, model: ChatModel) -> None:
        """Follow every call of `model`, still telling its own hook (never another app's)."""
        inner = model.observer
        if isinstance(inner, Telemetry):
            inner = inner._model_observer
        self._model_observer = inner
        model.observer = self

    # AgentObserver

    @contextlib.contextmanager
    def tool_call(self, name: str, call_id: str) -> Iterator[ToolEnded]:
        self.metrics.tool_calls.labels(name).inc()
        if self.tracer is None:
            yield lambda is_error: self._tool_ended(name, is_error, None)
            return
        with self.tracer.start_as_current_span(
            f"execute_tool {name}",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
            },
        ) as span:
            yield lambda is_error: self._tool_ended(name, is_error, span)

    def _tool_ended(self, name: str, is_error: bool, span: Span | None) -> None:
        if not is_error:
            return
        self.metrics.tool_errors.labels(name).inc()
        if span is not None:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, "the tool answered an error"))

    def store_retried(self) -> None:
        self.metrics.store_retries.inc()

    def trace_id(self) -> str | None:
        return None if self.tracer is None else current_trace_id()

    # ModelObserver

    def on_start(self, provider: str, model: str, attempt: int) -> ModelCallWatch:
        inner = self._model_observer.on_start(provider, model, attempt)
        span = None
        if self.tracer is not None:
            span = self.tracer.start_span(
                f"chat {model}",
                kind=SpanKind.CLIENT,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": PROVIDER_NAMES.get(provider, provider),
                    "gen_ai.system": provider,
                    "gen_ai.request.model": model,
                    "dodo.attempt": attempt,
                },
            )
        return _ModelCall(self.metrics, inner, span, model)

    # RunObserver

    def launch(self, kind: str, turn: Turn, program: RunProgram, launch: Launch) -> Run:
        if self.tracer is None:
            return launch(_ObservedRun(program, kind, self.metrics, None))
        span = self.tracer.start_span(
            f"invoke_agent {kind}",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": kind,
                "gen_ai.conversation.id": turn.conversation_id,
                "dodo.task_id": turn.task_id,
            },
        )
        try:
            with use_span(span, end_on_exit=False):
                run = launch(_ObservedRun(program, kind, self.metrics, span))
        except BaseException:
            span.end()
            raise
        if run.task is None:
            span.end()
        else:
            run.task.add_done_callback(lambda _task: span.end())
        return run


class _ModelCall:
    __slots__ = ("_inner", "_metrics", "_model", "_span", "_started")

    def __init__(
        self, metrics: Metrics, inner: ModelCallWatch, span: Span | None, model: str
    ) -> None:
        self._metrics = metrics
        self._inner = inner
        self._span = span
        self._model = model
        self._started = time.perf_counter()

    def first_chunk(self) -> None:
        self._inner.first_chunk()
        if self._span is not None:
            self._span.set_attribute(
                "gen_ai.response.time_to_first_chunk", time.perf_counter() - self._started
            )

    def end(self, elapsed: float, usage: Usage | None, error: BaseException | None) -> None:
        self._inner.end(elapsed, usage, error)
        if usage is not None:
            self._metrics.tokens.labels(self._model, "input").inc(usage.prompt_tokens)
            self._metrics.tokens.labels(self._model, "output").inc(usage.completion_tokens)
        span = self._span
        if span is None:
            return
        if usage is not None:
            span.set_attributes(_usage_attributes(usage))
        if error is not None:
            span.set_attribute("error.type", type(error).__qualname__)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        span.end()


class _ObservedRun:
    """The run's program, counted when it concludes; its events pass through untouched."""

    def __init__(self, inner: RunProgram, kind: str, metrics: Metrics, span: Span | None) -> None:
        self._inner = inner
        self._kind = kind
        self._metrics = metrics
        self._span = span

    def events(self, stop: StopSignal) -> AsyncGenerator[Event]:
        # Handed straight through: no layer between the agent and the run's log per event.
        return self._inner.events(stop)

    def movable(self) -> bool:
        return self._inner.movable()

    async def moved(self, handed_over: bool) -> None:
        await self._inner.moved(handed_over)
        if self._span is not None:
            self._span.set_attribute("dodo.run.status", "handed_over" if handed_over else "lost")

    async def conclude(self, stopped: RunStatus | None, notice: Notice) -> Conclusion:
        conclusion = await self._inner.conclude(stopped, notice)
        complete = conclusion.complete
        self._metrics.runs.labels(self._kind, complete.status).inc()
        if complete.first_response_time is not None:
            self._metrics.first_event.labels(self._kind).observe(
                complete.first_response_time / 1000
            )
        if self._span is not None:
            self._span.set_attribute("dodo.run.status", complete.status)
            if complete.usage.model is not None:
                self._span.set_attribute("dodo.run.model", complete.usage.model)
            if complete.usage.cost_usd is not None:
                self._span.set_attribute("dodo.run.cost_usd", complete.usage.cost_usd)
            self._span.set_attributes(
                _usage_attributes(
                    Usage(complete.usage.prompt_tokens, complete.usage.completion_tokens)
                )
            )
            if complete.status in ("failed", "interrupted"):
                self._span.set_status(Status(StatusCode.ERROR, complete.status))
        return conclusion


def _usage_attributes(usage: Usage) -> dict[str, int]:
    return {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
    }
