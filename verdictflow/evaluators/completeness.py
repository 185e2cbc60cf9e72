"""Completeness (spec 003): the share of the query's keywords that the response contains.

Keywords: NLTK's Treebank word tokenizer (``NLTKWordTokenizer``, which needs no downloaded data,
unlike ``nltk.word_tokenize`` whose sentence splitter needs punkt), after NFKC and lowercasing;
tokens that are stop words (scikit-learn's English list, the same as relevance uses) or not
alphanumeric are dropped. "Alphanumeric" admits inner hyphens, so "covid-19" and "state-of-the-art"
stay one keyword each; contractions and punctuation ("n't", "'s", "?") go. A query with no
keyword scores 1.0 (the spec's default), and the verdict says so.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

TOKENIZER_VERSION = "nltk-treebank-word:nfkc+lower:alnum(-):stop=sklearn-english"


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def keywords(text: str) -> list[str]:
    """Distinct keywords of ``text`` in first-seen order."""
    normalised = unicodedata.normalize("NFKC", text).lower()
    stop = _stop_words()
    seen: dict[str, None] = {}
    for token in _tokenizer().tokenize(normalised):
        if token in stop or not token.replace("-", "").isalnum():
            continue
        seen.setdefault(token, None)
    return list(seen)


@dataclass(frozen=True, slots=True)
class CompletenessResult:
    score: float
    query_keywords: tuple[str, ...]
    found: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def no_keywords(self) -> bool:
        return not self.query_keywords


def completeness(query: str, response: str) -> CompletenessResult:
    """|query keywords in the response| / |query keywords|; 1.0 when the query has none."""
    query_keywords = keywords(query)
    response_keywords = set(keywords(response))
    found = tuple(k for k in query_keywords if k in response_keywords)
    missing = tuple(k for k in query_keywords if k not in response_keywords)
    score = len(found) / len(query_keywords) if query_keywords else 1.0
    return CompletenessResult(score, tuple(query_keywords), found, missing)
