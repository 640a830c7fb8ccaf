"""One service process for `bench/tracing.py`: the app as `uvicorn app.main:app` serves it.

Run by path (`python bench/tracing_server.py VARIANT ...`), so `app` is imported
from whichever tree `PYTHONPATH` names: the working tree, or an older commit
unpacked for the baseline. `on` traces every turn into an exporter that drops
the spans, so the figure is the cost of making them, not of shipping them.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import uvicorn

from app.config import Settings
from app.factory import create_app

SWITCH_INTERVAL_SECONDS = 0.0005
"""What `app.main` sets for the served app; set here the same for every variant."""


def main(argv: Sequence[str]) -> None:
    variant, port, upstream, database_url, redis_url, prefix, data_dir = argv
    settings = Settings(
        _env_file=None,
        database_url=database_url,
        redis_url=redis_url,
        redis_prefix=prefix,
        data_dir=Path(data_dir),
        llm_base_url=upstream,
        llm_api_key="bench-key",
        llm_model="bench-model",
        recommendations_enabled=False,
        tavily_api_key="",
        log_level="WARNING",
        max_streams_per_user=0,
        streams_per_minute=0,
    )
    options: dict[str, Any] = {}
    if variant == "on":
        options["span_exporter"] = _dropping_exporter()
    app = create_app(settings, **options)
    gc.freeze()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")


def _dropping_exporter() -> Any:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Dropping(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    return Dropping()


if __name__ == "__main__":
    main(sys.argv[1:])
