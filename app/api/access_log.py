"""Keeps what people ask out of the access log.

A stream's question may travel in its query string (GET, which the original
client and `EventSource` use), and uvicorn's access log writes the whole
request target. This filter cuts the query string from the lines of the
routes whose parameters are a person's words or keys (the agent streams,
resume and stop, the other wire formats, search), so the log says which route
was asked, never what. Other routes keep their query strings (page numbers).
A share link's path is its secret: it is logged as `/shared/…`.
"""

from __future__ import annotations

import logging

ACCESS_LOGGER = "uvicorn.access"
PRIVATE_PREFIXES = ("/agent/", "/ag-ui/", "/ai-sdk/", "/a2a", "/session/search")
"""Paths whose query string is never logged."""
SECRET_PREFIX = "/shared/"
"""A path whose rest is a secret (a share link's token): logged as `/shared/…`."""


class PrivateQueryFilter(logging.Filter):
    """Rewrites an access record's target (`args[2]`) to its path on private routes, and to
    `/shared/…` on a share link's."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path, sep, _ = args[2].partition("?")
            if path.startswith(SECRET_PREFIX):
                record.args = (*args[:2], f"{SECRET_PREFIX}…", *args[3:])
            elif sep and path.startswith(PRIVATE_PREFIXES):
                record.args = (*args[:2], path, *args[3:])
        return True


def install() -> None:
    """Add the filter to uvicorn's access logger, once however many apps are built."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, PrivateQueryFilter) for f in logger.filters):
        logger.addFilter(PrivateQueryFilter())
