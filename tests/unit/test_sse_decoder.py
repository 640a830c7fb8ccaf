"""`SSEDecoder` against the WHATWG event-stream rules, under every chunking.

Upstreams and proxies cut their bodies anywhere: inside a field name, between
the CR and LF of one line ending, inside a multi-byte character. Each case is
fed whole, cut at every single point, and byte by byte.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.llm.sse import SSEDecoder, SSEvent


def decode(pieces: list[bytes]) -> list[SSEvent]:
    decoder = SSEDecoder()
    return [event for piece in pieces for event in decoder.feed(piece)]


def chunkings(body: bytes) -> Iterator[list[bytes]]:
    yield [body]
    for i in range(len(body) + 1):
        yield [body[:i], body[i:]]
    yield [body[i : i + 1] for i in range(len(body))]


CASES: list[tuple[bytes, list[SSEvent]]] = [
    (b'data: {"a":1}\n\n', [SSEvent("message", '{"a":1}')]),
    (b"data: one\n\ndata: two\n\n", [SSEvent("message", "one"), SSEvent("message", "two")]),
    (b"data: line1\ndata: line2\n\n", [SSEvent("message", "line1\nline2")]),
    (
        b"data: crlf\r\n\r\ndata: cr\r\rdata: lf\n\n",
        [SSEvent("message", m) for m in ("crlf", "cr", "lf")],
    ),
    (b": ping\n\n: comment\ndata: x\n\n", [SSEvent("message", "x")]),
    (
        b"event: content_block_delta\ndata: {}\n\ndata: next\n\n",
        [SSEvent("content_block_delta", "{}"), SSEvent("message", "next")],
    ),
    # Only one space after the colon is syntax; a missing one is fine too.
    (
        b"data:  two spaces\n\ndata:none\n\n",
        [SSEvent("message", " two spaces"), SSEvent("message", "none")],
    ),
    # A `data` line without a colon is an empty data line.
    (b"data\ndata\n\n", [SSEvent("message", "\n")]),
    (b"id: 7\nretry: 10\nunknown: x\ndata: kept\n\n", [SSEvent("message", "kept")]),
    # An event without data is not dispatched, and its type does not leak into the next.
    (b"event: lonely\n\ndata: after\n\n", [SSEvent("message", "after")]),
    ("data: héllo → 世界\n\n".encode(), [SSEvent("message", "héllo → 世界")]),
    (b"\xef\xbb\xbfdata: bom\n\n", [SSEvent("message", "bom")]),
    (b"data: [DONE]\n\n", [SSEvent("message", "[DONE]")]),
    # An event cut off by the end of the stream is dropped.
    (b"data: complete\n\ndata: cut off\n", [SSEvent("message", "complete")]),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_events_are_the_same_under_every_chunking(body: bytes, expected: list[SSEvent]) -> None:
    for pieces in chunkings(body):
        assert decode(pieces) == expected, pieces


def test_crlf_cut_between_cr_and_lf_ends_one_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\r") == [SSEvent("message", "a")]
    assert decoder.feed(b"\ndata: b\n\n") == [SSEvent("message", "b")]


def test_empty_chunks_change_nothing() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n\n") == [SSEvent("message", "a")]


def test_events_unpack_as_pairs() -> None:
    (event, data), *_ = SSEDecoder().feed(b"event: e\ndata: d\n\n")
    assert (event, data) == ("e", "d")
