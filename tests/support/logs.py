"""Watching what the app logs, for facts a test cannot see otherwise (a retry about to happen).

Handlers run in the thread that logs, which for the app under test is the
test's own event loop, so they may set asyncio events directly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

import pytest

H = TypeVar("H", bound=logging.Handler)


class LogSignal(logging.Handler):
    """Sets `seen` once a record whose message contains `text` is logged."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@contextmanager
def attached(logger_name: str, handler: H) -> Iterator[H]:
    """`handler` receives the logger's records inside the block."""
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@contextmanager
def server_errors(caplog: pytest.LogCaptureFixture) -> Iterator[list[logging.LogRecord]]:
    """The ERROR records logged inside the block, uvicorn's own included.

    uvicorn's logger keeps its records from the root logger, where `caplog`
    listens, so caplog's handler is attached to it here too. The list is
    filled when the block ends.
    """
    errors: list[logging.LogRecord] = []
    with attached("uvicorn.error", caplog.handler):
        yield errors
    errors.extend(r for r in caplog.records if r.levelno >= logging.ERROR)
