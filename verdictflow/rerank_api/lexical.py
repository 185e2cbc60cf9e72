"""BM25 over the live documents (bm25s), for the lexical and hybrid retrieval modes.

Why: the default hashing embedder is a lexical projection and ranks well below BM25 (SciFact
nDCG@10 ~0.41 vs ~0.67), so the retriever offers BM25 itself. Tokens: bm25s's word pattern,
lower-cased, English stop words removed, Porter-stemmed (NLTK's pure-Python stemmer: no data
download), which is the usual BEIR/Anserini BM25 set-up (k1 = 0.9, b = 0.4 there; bm25s's
Lucene defaults k1 = 1.5, b = 0.75 are kept here, not tuned to a data set).

A BM25 index is corpus-wide (document frequencies), so it cannot be updated one document at a
time: the retriever rebuilds a snapshot in the background when documents changed (at most once
per refresh interval) and searches the last complete one, dropping documents deleted since.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import bm25s
import numpy as np

logger = logging.getLogger(__name__)

VERSION = "vf-bm25/1:bm25s-lucene:k1=1.5:b=0.75:stop=english:porter"


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    """NLTK's Porter stemmer, imported on first use: importing ``nltk`` takes ~2 s, which
    every command line start would otherwise pay."""
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer().stem(word))


def _stem_words(words: Sequence[str]) -> list[str]:
    return [_stem(w) for w in words]


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """The token lists BM25 indexes and queries with (deterministic, no corpus state)."""
    if not texts:
        return []
    out = bm25s.tokenize(
        list(texts),
        stopwords="en",
        stemmer=_stem_words,
        return_ids=False,
        show_progress=False,
    )
    return [list(tokens) for tokens in out]


class LexicalIndex:
    """An immutable BM25 snapshot, swapped whole by :meth:`rebuild`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bm25: bm25s.BM25 | None = None
        self._ids: list[str] = []

    def __len__(self) -> int:
        return len(self._ids)

    def rebuild(self, doc_ids: Sequence[str], texts: Sequence[str]) -> None:
        """Build a new snapshot from scratch (slow at 100k docs: run it in a thread)."""
        ids = list(doc_ids)
        model: bm25s.BM25 | None = None
        tokens = tokenize(texts) if ids else []
        if any(tokens):  # bm25s cannot index a corpus without a single token
            model = bm25s.BM25()
            model.index(tokens, show_progress=False)
        with self._lock:
            self._bm25, self._ids = model, ids
        logger.debug("BM25 snapshot rebuilt over %d documents", len(ids))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Top ``k`` documents with a positive BM25 score, best first, ties by doc_id."""
        with self._lock:
            model, ids = self._bm25, self._ids
        if model is None or k <= 0:
            return []
        tokens = [t for t in tokenize([query])[0] if t in model.vocab_dict]
        if not tokens:
            return []
        scores = np.asarray(model.get_scores(tokens), dtype=np.float64)
        k = min(k, len(ids))
        top = np.argpartition(-scores, k - 1)[:k]
        hits = [(ids[i], float(scores[i])) for i in top if scores[i] > 0]
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits
