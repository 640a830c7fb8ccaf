"""The service's Prometheus metrics, on a registry of the app's own.

Each app builds its own `CollectorRegistry` rather than using
prometheus_client's process-wide one, so tests that build several apps in
one process do not collide, and `/metrics` shows only this app's figures.
Labels are bounded sets (agent kinds, statuses, tool names, configured model
names): never a user, a conversation or a URL.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

FIRST_EVENT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""Seconds: a local model answers in tens of milliseconds, a reasoning model in tens of seconds."""


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.runs = Counter(
            "dodo_runs",
            "Agent runs ended, by agent kind and the status they were stored with.",
            ["agent", "status"],
            registry=self.registry,
        )
        self.open_streams = Gauge(
            "dodo_open_streams",
            "Event streams (agent streams and resumes) open now.",
            registry=self.registry,
        )
        self.first_event = Histogram(
            "dodo_time_to_first_event_seconds",
            "From a run's start to its first answer or thinking text, by agent kind.",
            ["agent"],
            buckets=FIRST_EVENT_BUCKETS,
            registry=self.registry,
        )
        self.tokens = Counter(
            "dodo_model_tokens",
            "Tokens of model calls, by model and direction (input: prompt, output: completion).",
            ["model", "direction"],
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "dodo_tool_calls",
            "Tool calls made by agents, by tool.",
            ["tool"],
            registry=self.registry,
        )
        self.tool_errors = Counter(
            "dodo_tool_errors",
            "Tool calls that ended in an error result, by tool.",
            ["tool"],
            registry=self.registry,
        )
        self.store_retries = Counter(
            "dodo_store_retries",
            "Final stores of a turn that failed and were tried again.",
            registry=self.registry,
        )

    def page(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
