"""Chunking, tokenizing and ranking: the parts of document search that need no I/O."""

from __future__ import annotations

import itertools
import re

from app.documents.extract import Document, Section
from app.documents.retrieval import Bm25Index, chunk, fuse, normalize, rank, tokenize


def pages(*texts: str) -> Document:
    return Document("page", [Section(n, n, t) for n, t in enumerate(texts, 1)])


def sentence_page(page: int, sentences: int = 30) -> str:
    return " ".join(f"Page {page} sentence {i} talks about topic{page}." for i in range(sentences))


def test_a_short_document_is_one_passage_spanning_all_its_pages() -> None:
    document = pages("First page.", "Second page.", "Third page.")

    (only,) = chunk(document, size=100, overlap=20, whole=1000)

    assert (only.seq, only.unit, only.first, only.last) == (0, "page", 1, 3)
    assert only.text == "First page.\n\nSecond page.\n\nThird page."


def test_long_text_is_cut_at_sentence_ends_with_overlap_and_located() -> None:
    document = pages(*(sentence_page(p) for p in range(1, 6)))

    chunks = chunk(document, size=300, overlap=80, whole=0)

    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert all(len(c.text) <= 300 and c.text.endswith(".") for c in chunks)
    for earlier, later in itertools.pairwise(chunks):
        if later.text.startswith("Page") and " sentence 0 " in later.text[:20]:
            continue  # a new page starts fresh (next test)
        # Cut inside a page: the next passage repeats the end of this one.
        opening = " ".join(later.text.split()[:4])
        assert opening in earlier.text[-90:]
    for passage in chunks:
        mentioned = {int(n) for n in re.findall(r"Page (\d+)", passage.text)}
        assert mentioned <= set(range(passage.first, passage.last + 1))
        assert passage.first in mentioned
    # Nothing is lost: every sentence is whole in some passage.
    for p in range(1, 6):
        for i in range(30):
            sentence = f"Page {p} sentence {i} talks about topic{p}."
            assert any(sentence in c.text for c in chunks)


def test_a_cut_between_pages_needs_no_overlap() -> None:
    document = pages("A" * 50 + " first page ends.", "Second page starts here.")

    first, second = chunk(document, size=90, overlap=40, whole=0)

    assert (first.first, first.last, first.text) == (1, 1, "A" * 50 + " first page ends.")
    assert (second.first, second.last, second.text) == (2, 2, "Second page starts here.")


def test_text_without_spaces_is_still_cut() -> None:
    document = pages("文" * 1000)

    chunks = chunk(document, size=300, overlap=50, whole=0)

    assert len(chunks) >= 4
    assert all(0 < len(c.text) <= 300 for c in chunks)
    assert sum(len(c.text) for c in chunks) >= 1000


def test_tokenize_words_and_cjk_bigrams() -> None:
    assert tokenize("The Pump's WARRANTY: 7 years, pump_id") == [
        "the",
        "pump",
        "s",
        "warranty",
        "7",
        "years",
        "pump",
        "id",
    ]
    assert tokenize("保修期七年") == ["保修", "修期", "期七", "七年"]
    assert tokenize("型号X1是") == ["型号", "x1", "是"]


def test_bm25_puts_the_passage_with_the_rare_terms_first() -> None:
    texts = [
        "The pump is blue and the pump is loud.",
        "Shipping takes three days for every order.",
        "The warranty of the pump lasts seven years.",
        "The manual describes the pump in detail.",
    ]

    order = rank(Bm25Index(texts), "pump warranty years", top_k=3)

    assert order[0] == 2
    assert 1 not in order


def test_bm25_without_any_shared_term_finds_nothing() -> None:
    assert rank(Bm25Index(["alpha beta", "gamma delta"]), "omega", top_k=5) == []


def test_bm25_in_chinese() -> None:
    texts = ["本产品的保修期为七年。", "发货需要三天。", "说明书介绍了水泵。"]

    assert rank(Bm25Index(texts), "保修期多长", top_k=1) == [0]


def test_hybrid_ranking_lets_vectors_lift_a_passage_bm25_misses() -> None:
    texts = ["cats sleep", "dogs bark", "birds sing"]
    vectors = [normalize(v) for v in ([1.0, 0.0], [0.0, 1.0], [0.6, 0.8])]
    query_vector = normalize([0.0, 1.0])

    assert rank(Bm25Index(texts), "cats", top_k=3) == [0]
    assert rank(Bm25Index(texts), "cats", 3, vectors, query_vector) == [0, 1, 2]


def test_fuse_rewards_agreement_between_rankings() -> None:
    assert fuse([[1, 2, 3], [3, 2, 1], [2]]) == [2, 1, 3]


def test_normalize_gives_unit_length_and_keeps_zero() -> None:
    assert normalize([3.0, 4.0]) == [0.6, 0.8]
    assert normalize([0.0, 0.0]) == [0.0, 0.0]
