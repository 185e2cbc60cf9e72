"""Context text tokenized chunk by chunk (``evaluators/chunk_tokens.py``): the very tokens,
offsets and norms spaCy's tokenizer gives the whole text, and the same evidence index."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import SHARED_DATA
from verdictflow.evaluators import chunk_tokens
from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.evaluators.chunk_tokens import ChunkMemo, Exceptions, exception_pairs
from verdictflow.evaluators.context_index import ContextIndexer, Form
from verdictflow.nlp import load_pipeline

#: Pieces full of the tokenizer's exceptions and of what their patterns are made of
#: (":-)" is ":", "-", ")"; "''" is "'", "'"), whitespace of every kind, a long run.
PIECES = [
    "Hello", "world", ".", "!!!", "?", '."', ")", "(", "e.g.", "Dr.", "3.5", "...", ":", ";",
    ":)", "):", ":-)", ":-(", "'s", "'", "''", "don't", "10a.m.", "a.m.", "p.m.", "(:", "8)",
    "-", "_", "*", "<3", "</3", "o", "p", "D", "vs.", "U.S.", "cause", "'cause", "em", "'em",
    "=" * 40, "!" * 70, "(p<0.05).", "n't", "’s", "\xa0", "—",
]  # fmt: skip
SEPARATORS = ["", " ", " ", " ", "  ", "\n", " \n", "\t", "\n\n", " \xa0"]


@pytest.fixture(scope="module")
def nlp():
    return load_pipeline(COMPONENTS)


@pytest.fixture(scope="module")
def exceptions(nlp) -> Exceptions:
    """Read once for the module (~40 ms a read): each example gets a fresh memo with them."""
    return exception_pairs(nlp.tokenizer)


def whole(indexer: ContextIndexer, nlp, text: str) -> tuple[list[Form], list[int]]:
    forms, offsets, _ = indexer._tokens(nlp.make_doc(text))
    return forms, offsets


def fresh(nlp, exceptions: Exceptions) -> ContextIndexer:
    return ContextIndexer(nlp, chunks=ChunkMemo(exceptions=exceptions))


def doc_only(nlp, exceptions: Exceptions) -> ContextIndexer:
    """An indexer that hands every text to spaCy whole: the reference."""
    indexer = fresh(nlp, exceptions)
    indexer._chunks.tokens = lambda text: None  # type: ignore[method-assign]
    return indexer


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(SEPARATORS)), max_size=25))
def test_the_tokens_are_spacys_for_the_whole_text(
    nlp, exceptions: Exceptions, parts: list[tuple[str, str]]
) -> None:
    text = "".join(piece + gap for piece, gap in parts)
    indexer = fresh(nlp, exceptions)
    chunked = indexer._chunks.tokens(text)
    if chunked is not None:
        assert chunked == whole(indexer, nlp, text), text
    assert indexer.index(text) == doc_only(nlp, exceptions).index(text)


#: Fragments of the exceptions' patterns, glued into chunks a space apart: matches across
#: chunks abound, and some win over a match inside a chunk ("' '':-)").
FRAGMENTS = ["'", "''", ":", "-", ")", "(", "):", ":-)", "(:", ":)", "8", "D", "a.m.", "10a.m"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3).map("".join),
        min_size=2,
        max_size=6,
    )
)
def test_matches_across_chunks_never_change_the_tokens(
    nlp, exceptions: Exceptions, words: list[str]
) -> None:
    text = " ".join(words)
    indexer = fresh(nlp, exceptions)
    chunked = indexer._chunks.tokens(text)
    assert chunked is None or chunked == whole(indexer, nlp, text), text


def test_a_match_across_chunks_hands_the_text_to_spacy_whole(nlp, exceptions) -> None:
    # spaCy: "''" is one token alone, but after "' " the matcher's pattern "'", "'" crosses
    # the space and wins, and "''" stays two tokens; ") :" likewise.
    memo: ChunkMemo[Form] = ChunkMemo()
    indexer = ContextIndexer(nlp, chunks=memo)
    for text in ["' '':-)", "):- (:a.m."]:
        assert indexer._chunks.tokens(text) is None
        forms, _ = whole(indexer, nlp, text)
        assert [f.text for f in forms] != [f.text for w in text.split() for f in _alone(nlp, w)]
        assert indexer.index(text) == doc_only(nlp, exceptions).index(text)
    assert memo.whole >= 2
    assert indexer._chunks.tokens("Prices rose (3%). They fell :) later.") is not None


def _alone(nlp, word: str) -> list[Form]:
    forms, _ = whole(ContextIndexer(nlp), nlp, word)
    return forms


def test_chunks_read_together_are_those_read_one_by_one(nlp) -> None:
    words = [w for piece in PIECES for w in piece.split()] + ["cells,", "(HR", "0.72,", "95%"]
    together: ChunkMemo[Form] = ChunkMemo()
    ContextIndexer(nlp, chunks=together)._chunks._learn_words(sorted(set(words)))
    apart: ChunkMemo[Form] = ChunkMemo()
    one_by_one = ContextIndexer(nlp, chunks=apart)._chunks
    for word in set(words):
        one_by_one._learn(word)
    assert together.chunks == apart.chunks
    kept = {w for w in words if len(w) <= chunk_tokens.CHUNK_CHARS}  # not "!" * 70
    assert set(together.chunks) == kept


def test_the_memo_is_bounded(nlp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunk_tokens, "CHUNK_CACHE", 8)
    memo: ChunkMemo[Form] = ChunkMemo()
    indexer = ContextIndexer(nlp, chunks=memo)
    text = "one two three four five six seven eight nine ten eleven twelve"
    for _ in range(3):
        assert indexer._chunks.tokens(text) == whole(indexer, nlp, text)
        assert len(memo.chunks) <= 8 + len(text.split())
    long_word = "x" * (chunk_tokens.CHUNK_CHARS + 1)
    indexer._chunks.tokens(f"a {long_word} b")
    assert long_word not in memo.chunks  # a long chunk is read afresh, never kept


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")
def test_the_data_sets_texts_tokenize_as_spacy_tokenizes_them(nlp) -> None:
    """Every string field of the first records of every JSON Lines file."""
    texts: set[str] = set()
    for path in sorted(SHARED_DATA.rglob("*.jsonl")):
        with path.open() as lines:
            for _, line in zip(range(40), lines, strict=False):
                record = json.loads(line)
                if isinstance(record, dict):
                    texts.update(v for v in record.values() if isinstance(v, str) and v.strip())
    assert len(texts) > 500
    memo: ChunkMemo[Form] = ChunkMemo()
    indexer = ContextIndexer(nlp, chunks=memo)
    for text in sorted(texts):
        chunked = indexer._chunks.tokens(text)
        if chunked is not None:
            assert chunked == whole(indexer, nlp, text), text[:200]
    assert memo.whole < len(texts) / 10, "most texts are read by their chunks"
    assert any(re.search(r"\s\s|\n", t) for t in texts), "texts with other whitespace too"
