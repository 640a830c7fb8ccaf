"""Finding the passages of one document that answer a question.

- `chunk`: a document becomes passages of about `size` characters, each
  ending at a paragraph, sentence or word boundary. A passage that had to
  end inside a paragraph is followed by one starting `overlap` characters
  earlier, so a fact cut there is whole in one of them. Each passage knows
  the pages (paragraphs, lines) it spans. A document no longer than `whole`
  stays one passage: it is read whole rather than searched.
- `Bm25Index`: Okapi BM25 over the passages, needing no model. The tokenizer
  takes words in spaced scripts and character bigrams in Chinese, Japanese
  and Korean, which have no spaces between words.
- `rank`: BM25 alone, or, when the passages and the query have embeddings,
  BM25 and cosine similarity fused by reciprocal rank, which needs no score
  calibration between the two.

Left out: stemming, stop words, phrase queries, and any index that outlives
a search (one file's passages are scored at query time); vector search
across files (no vector database is needed for one file's passages).
"""

from __future__ import annotations

import bisect
import math
import operator
import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from app.documents.extract import Document
from app.store.base import FileChunk

BM25_K1 = 1.2
BM25_B = 0.75
RRF_K = 60
"""Reciprocal-rank constant: the customary 60 keeps one list's top hit from dominating."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
"""A run of CJK characters, or a word of other letters and digits."""
_CJK_CHAR = re.compile(f"[{_CJK}]")
_BREAKS = ("\n\n", "\n", ". ", "。", "! ", "? ", "！", "？", " ")
_SPACE = re.compile(r"\s")


class Embedder(Protocol):
    """What retrieval needs of an embeddings client (app/llm/embeddings.py is one)."""

    @property
    def model(self) -> str: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def chunk(document: Document, size: int, overlap: int, whole: int) -> list[FileChunk]:
    text = document.text
    sections = document.sections
    if not sections:
        return []  # a deck template: no slide has text
    starts: list[int] = []
    offset = 0
    for section in sections:
        starts.append(offset)
        offset += len(section.text) + 2  # the "\n\n" that joins sections
    if len(text) <= whole:
        return [FileChunk(0, document.unit, sections[0].first, sections[-1].last, text)]

    def located(a: int, b: int) -> FileChunk:
        first = sections[bisect.bisect_right(starts, a) - 1].first
        last = sections[bisect.bisect_right(starts, b - 1) - 1].last
        return FileChunk(len(chunks), document.unit, first, last, text[a:b])

    overlap = min(overlap, size // 2)
    chunks: list[FileChunk] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            end = _break_before(text, start + size // 2, end)
        raw = text[start:end]
        a, b = start + len(raw) - len(raw.lstrip()), start + len(raw.rstrip())
        if a < b:
            chunks.append(located(a, b))
        if end >= len(text):
            break
        if text.endswith("\n\n", start, end):
            start = end  # cut between paragraphs (or pages): nothing was split, no overlap
        else:
            start = _word_start(text, max(end - overlap, start + 1), end)
    return chunks


def _break_before(text: str, low: int, high: int) -> int:
    """Where to end a passage in text[low:high]: after a paragraph, line, sentence or word."""
    for mark in _BREAKS:
        found = text.rfind(mark, low, high)
        if found >= 0:
            return found + len(mark)
    return high


def _word_start(text: str, position: int, limit: int) -> int:
    """`position`, moved forward to the start of a word when it falls inside one."""
    if position == 0 or text[position - 1].isspace():
        return position
    space = _SPACE.search(text, position, limit)
    return space.end() if space else position


def tokenize(text: str) -> list[str]:
    runs: list[str] = _TOKEN.findall(text.lower())
    if not _CJK_CHAR.search(text):
        return runs  # the common case, in one pass of the regex engine
    tokens: list[str] = []
    for run in runs:
        if len(run) > 1 and _CJK_CHAR.match(run):
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            tokens.append(run)
    return tokens


class Bm25Index:
    """Term statistics of a set of passages, computed once, scored per query."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._counts = [Counter(tokenize(t)) for t in texts]
        self._lengths = [sum(c.values()) for c in self._counts]
        self._average = (sum(self._lengths) / len(texts)) if texts else 0.0
        frequency: Counter[str] = Counter()
        for counts in self._counts:
            frequency.update(counts.keys())
        n = len(texts)
        self._idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in frequency.items()}

    def scores(self, query: str) -> list[float]:
        terms = [t for t in dict.fromkeys(tokenize(query)) if t in self._idf]
        out: list[float] = []
        for counts, length in zip(self._counts, self._lengths, strict=True):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / (self._average or 1))
            score = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += self._idf[term] * tf * (BM25_K1 + 1) / (tf + norm)
            out.append(score)
        return out


def rank(
    index: Bm25Index,
    query: str,
    top_k: int,
    vectors: Sequence[Sequence[float]] | None = None,
    query_vector: Sequence[float] | None = None,
) -> list[int]:
    """Indices of the best passages, best first.

    BM25 alone returns only passages sharing a term with the query (possibly
    none); with vectors every passage has a cosine rank, so the fused list is
    always full.
    """
    scores = index.scores(query)
    lexical = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])
    if vectors is None or query_vector is None:
        return lexical[:top_k]
    similarity = [_dot(query_vector, v) for v in vectors]
    semantic = sorted(range(len(similarity)), key=lambda i: -similarity[i])
    return fuse([lexical, semantic])[:top_k]


def fuse(rankings: Sequence[Sequence[int]]) -> list[int]:
    """Reciprocal rank fusion: each list gives 1 / (k + rank) to each item it ranks."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for position, item in enumerate(ranking, 1):
            fused[item] = fused.get(item, 0.0) + 1 / (RRF_K + position)
    return sorted(fused, key=lambda i: (-fused[i], i))


def normalize(vector: Sequence[float]) -> list[float]:
    """Unit length, so cosine similarity is a dot product; a zero vector stays zero."""
    length = math.sqrt(math.fsum(x * x for x in vector))
    return [x / length for x in vector] if length else list(vector)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(map(operator.mul, a, b)))
