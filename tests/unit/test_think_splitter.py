"""`ThinkTagSplitter` must give the same split whatever the chunk boundaries.

Models stream `<think>` tags cut anywhere, so each case is checked under every
way of cutting the text into two and three pieces, and one character at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.core.messages import TextBlock, ThinkingBlock
from app.llm.think import ThinkTagSplitter

Span = tuple[str, str]


def run(pieces: list[str]) -> list[Span]:
    """Feed the pieces, flush, and merge adjacent blocks of one kind."""
    splitter = ThinkTagSplitter()
    blocks = [b for piece in pieces for b in splitter.feed(piece)] + splitter.flush()
    spans: list[Span] = []
    for block in blocks:
        kind, text = (
            ("text", block.text) if isinstance(block, TextBlock) else ("thinking", block.thinking)
        )
        assert text, "the splitter never emits empty blocks"
        if spans and spans[-1][0] == kind:
            spans[-1] = (kind, spans[-1][1] + text)
        else:
            spans.append((kind, text))
    return spans


def cuts(text: str) -> Iterator[list[str]]:
    """Every way to cut `text` into two or three pieces, then one character at a time."""
    for i in range(len(text) + 1):
        yield [text[:i], text[i:]]
        for j in range(i, len(text) + 1):
            yield [text[:i], text[i:j], text[j:]]
    yield list(text)


CASES: list[tuple[str, list[Span]]] = [
    ("plain answer", [("text", "plain answer")]),
    ("<think>why</think>answer", [("thinking", "why"), ("text", "answer")]),
    (
        "a<think>b</think>c<think>d</think>e",
        [("text", "a"), ("thinking", "b"), ("text", "c"), ("thinking", "d"), ("text", "e")],
    ),
    # Inside a span only the closing tag counts: an opening tag is reasoning text.
    ("<think>x<think>y</think>z", [("thinking", "x<think>y"), ("text", "z")]),
    ("a < b <th>ink</think>", [("text", "a < b <th>ink</think>")]),
    ("<think>unclosed reasoning", [("thinking", "unclosed reasoning")]),
    ("ends with a partial tag <thin", [("text", "ends with a partial tag <thin")]),
    ("<think>cut close </thi", [("thinking", "cut close </thi")]),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_split_is_the_same_at_every_cut(text: str, expected: list[Span]) -> None:
    for pieces in cuts(text):
        assert run(pieces) == expected, pieces


def test_text_before_a_possible_tag_is_released_at_once() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed("Hello <th") == [TextBlock("Hello ")]
    assert splitter.feed("ink>deep") == [ThinkingBlock("deep")]


def test_flush_releases_a_held_back_suffix_once() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed("x </") == [TextBlock("x </")]
    assert splitter.feed("<") == []
    assert splitter.flush() == [TextBlock("<")]
    assert splitter.flush() == []
