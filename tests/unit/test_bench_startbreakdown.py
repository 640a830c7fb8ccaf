"""A turn's start split into stages from its spans and its client's times (bench.startbreakdown)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.startbreakdown import breakdown, turn_stages

MS = 1_000_000
"""Nanoseconds, as spans are stamped."""
T0 = 1_700_000_000 * 1_000_000_000


def _span(
    name: str, start_ms: float, end_ms: float, *, span_id: int, parent: int | None = 1, **extra: Any
) -> dict[str, Any]:
    return {
        "trace": f"{1:032x}",
        "id": span_id,
        "parent": parent,
        "name": name,
        "start": T0 + int(start_ms * MS),
        "end": T0 + int(end_ms * MS),
        "attributes": extra.get("attributes", {}),
        "events": extra.get("events", []),
    }


def _turn(*, claim: bool, history: bool) -> list[dict[str, Any]]:
    """A turn's spans: the request (its parent the client's traceparent), its start (the turn's
    read, beside the claim), the run."""
    events = [
        ["http11.send_request_headers.started", T0 + 30 * MS],
        ["http11.receive_response_headers.complete", T0 + 34 * MS],
    ]
    spans = [
        _span("GET /agent/{kind}/stream", 2, 200, span_id=2, parent=99),
        _span("SELECT", 4, 8, span_id=9, parent=2),
        _span("INSERT", 10, 14, span_id=4, parent=2),
        _span("invoke_agent chat", 20, 190, span_id=5, parent=2, events=events),
        _span(
            "chat bench",
            25,
            180,
            span_id=6,
            parent=5,
            attributes={"gen_ai.response.time_to_first_chunk": 0.010},
        ),
        _span("UPDATE", 185, 187, span_id=7, parent=5),
    ]
    if claim:
        spans.append(_span("tasks.claim", 3, 7, span_id=3, parent=2))
    if history:
        spans.append(_span("SELECT", 14, 16, span_id=8, parent=2))
    return spans


def test_each_stage_runs_from_one_mark_to_the_next() -> None:
    stages = turn_stages(
        _turn(claim=True, history=True), sent=T0 / 1e9, first_token=(T0 + 40 * MS) / 1e9
    )

    in_ms = {stage: round(seconds * 1000, 3) for stage, seconds in stages.items()}
    assert in_ms == {
        "request in": 2.0,
        "checks": 1.0,
        "claim": 4.0,
        "turn read": 4.0,
        "waiting to start": 2.0,
        "question row": 4.0,
        "history read": 2.0,
        "launch, to the model": 9.0,
        "model connect": 5.0,
        "first model byte": 4.0,
        "first chunk read": 1.0,
        "to the client": 5.0,
    }


def test_without_a_traced_claim_the_checks_run_on_to_the_turns_read() -> None:
    stages = turn_stages(
        _turn(claim=False, history=False), sent=T0 / 1e9, first_token=(T0 + 40 * MS) / 1e9
    )

    assert "claim" not in stages
    assert "history read" not in stages
    assert stages["checks"] == pytest.approx(0.002)
    assert stages["waiting to start"] == pytest.approx(0.002)
    assert stages["launch, to the model"] == pytest.approx(0.011)


def test_only_turns_whose_spans_and_client_times_join_are_counted() -> None:
    spans = _turn(claim=True, history=False)
    # Stream 0's traceparent carries trace id 1; stream 5 left no spans.
    timings = [[0, T0 / 1e9, (T0 + 40 * MS) / 1e9], [5, T0 / 1e9, (T0 + 50 * MS) / 1e9]]

    result = breakdown(spans, timings)

    assert result["turns"] == 1
    assert result["model_connects"] == 0
    assert result["stages"]["claim"]["p50"] == pytest.approx(4.0)
    assert "history read" not in result["stages"]
