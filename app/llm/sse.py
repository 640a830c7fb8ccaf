"""Decode an upstream `text/event-stream` body into events, whatever the chunk boundaries.

OpenAI-compatible servers, Anthropic and Gemini (`alt=sse`) all stream their
answers as server-sent events, so every adapter shares this decoder. It runs
once per streamed token, so it works on bytes (splitting on b"\\n" is cheap,
and bytes never split on the Unicode line separators that `str.splitlines`
honours), decodes only complete lines, and allocates one small tuple per event.

Per the WHATWG spec: lines end with CRLF, LF or CR (a CRLF may be cut between
two chunks); `data:` lines of one event join with "\\n"; a blank line dispatches
the event; `:` comment lines are ignored; an event cut off by the end of the
stream is dropped. Left out: `id:` and `retry:`, which only matter to a client
that reconnects, and adapters never reconnect a half-streamed model answer.
"""

from __future__ import annotations

from typing import NamedTuple

_BOM = b"\xef\xbb\xbf"
"""A UTF-8 byte order mark, which the spec says to skip at the start of a stream."""


class SSEvent(NamedTuple):
    event: str
    """The `event:` field, "message" when the server named none."""
    data: str


class SSEDecoder:
    """Feed it byte chunks; it returns the events each chunk completes."""

    __slots__ = ("_data", "_event", "_pending", "_skip_lf", "_started")

    def __init__(self) -> None:
        self._pending = b""
        """The start of a line whose end has not arrived yet."""
        self._data: list[bytes] = []
        self._event = ""
        self._skip_lf = False
        """The previous chunk ended in CR: a LF opening the next one ends no new line."""
        self._started = False

    def feed(self, chunk: bytes) -> list[SSEvent]:
        if not chunk:
            return []
        if not self._started:
            chunk, self._pending = self._pending + chunk, b""
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._pending = chunk  # maybe a byte order mark cut short
                return []
            self._started = True
            chunk = chunk.removeprefix(_BOM)
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf = self._pending + chunk if self._pending else chunk
        if b"\r" in buf:
            lines = buf.splitlines(keepends=True)
            self._pending = lines.pop() if not lines[-1].endswith((b"\n", b"\r")) else b""
            self._skip_lf = buf.endswith(b"\r")
            lines = [line.rstrip(b"\r\n") for line in lines]
        else:
            lines = buf.split(b"\n")
            self._pending = lines.pop()
        events: list[SSEvent] = []
        for line in lines:
            if line.startswith(b"data: "):
                self._data.append(line[6:])
            elif not line:
                if self._data:
                    data = b"\n".join(self._data).decode("utf-8", "replace")
                    events.append(SSEvent(self._event or "message", data))
                    self._data.clear()
                self._event = ""
            elif line.startswith(b"data:") or line == b"data":
                self._data.append(line[5:])
            elif line.startswith(b"event:"):
                value = line[7:] if line[6:7] == b" " else line[6:]
                self._event = value.decode("utf-8", "replace")
        return events
