"""Traces (OpenTelemetry, off unless configured) and metrics (Prometheus) for the service.

`build_telemetry()` makes the app's `Telemetry` in the lifespan; `TelemetryMiddleware`
makes request spans and counts open streams; `app/api/metrics.py` serves `/metrics`.
"""

from app.telemetry.metrics import Metrics
from app.telemetry.middleware import TelemetryMiddleware
from app.telemetry.observers import Telemetry
from app.telemetry.setup import build_telemetry

__all__ = ["Metrics", "Telemetry", "TelemetryMiddleware", "build_telemetry"]
