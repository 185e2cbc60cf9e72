"""The spec tokenizer (Q1/Q2 spec, 000): NFKC, lowercase, regex ``\\w+``, distinct token set.

Stop-word removal is optional and off by default, as the spec says. When on, the list is
scikit-learn's ``ENGLISH_STOP_WORDS`` (a maintained list, read from scikit-learn's own file
without importing scikit-learn: :mod:`verdictflow.english_stop_words`). The version string
names every choice that changes a token set, and goes into every verdict; change it whenever
the behaviour changes.

Text normalisation (:mod:`~verdictflow.evaluators.text_normalise`: NFKC, invisible format and
control characters and terminal escapes removed) is an addition to the spec's "lowercase,
\\w+": it folds compatibility forms (ligatures, full-width letters) that would otherwise make
"ﬁle" and "file" different tokens, and keeps a zero-width space from splitting "cat" in two.
For printable ASCII it changes nothing, so the spec's worked examples hold exactly.
"""

from __future__ import annotations

import re
from functools import lru_cache

from verdictflow.english_stop_words import english_stop_words
from verdictflow.evaluators import text_normalise

_WORD = re.compile(r"\w+")
_BASE_VERSION = f"vf-tok/2:{text_normalise.VERSION}+lower+re:\\w+:set"


def stop_words() -> frozenset[str]:
    """scikit-learn's English stop words, read on first use (and kept by
    :func:`~verdictflow.english_stop_words.english_stop_words`)."""
    return english_stop_words()


#: Texts up to this many characters have their token sets memoised: one answer's text is
#: tokenized by groundedness, relevance and consistency in turn (three passes of NFKC and
#: ``\\w+`` for one result). Bounded: at most :data:`_MEMO_ENTRIES` such texts.
_MEMO_MAX_CHARS = 8192
_MEMO_ENTRIES = 512


class Tokenizer:
    """Deterministic tokenizer producing distinct token sets."""

    def __init__(self, *, remove_stopwords: bool = False) -> None:
        self.remove_stopwords = remove_stopwords
        suffix = ":stop=sklearn-english" if remove_stopwords else ":stop=off"
        self.version = _BASE_VERSION + suffix

    def tokens(self, text: str) -> frozenset[str]:
        """Distinct tokens of ``text`` (an empty set for empty or punctuation-only text)."""
        if len(text) > _MEMO_MAX_CHARS:
            return _token_set(text, self.remove_stopwords)
        return _memoised_token_set(text, self.remove_stopwords)


#: ASCII bytes that are not ``\\w`` (letters, digits, underscore) -> space.
_ASCII_NON_WORD = bytes(
    c if chr(c).isascii() and (chr(c).isalnum() or chr(c) == "_") else 32 for c in range(256)
)


def _words(text: str) -> list[str]:
    """``\\w+`` runs of ``text``; ASCII text by one byte translation and a split, which
    give the same runs in half the time (``\\w`` is ``[A-Za-z0-9_]`` on ASCII)."""
    if text.isascii():
        return text.encode().translate(_ASCII_NON_WORD).decode().split()
    return _WORD.findall(text)


def _token_set(text: str, remove_stopwords: bool) -> frozenset[str]:
    found = _words(text_normalise.lower(text_normalise.clean(text)))
    if remove_stopwords:
        stop = stop_words()
        return frozenset(t for t in found if t not in stop)
    return frozenset(found)


#: A pure function of its arguments, so memoising it cannot change a token set; lru_cache is
#: thread-safe (the NLP tier scores in a thread beside the lexical tier in ``--tier all``).
_memoised_token_set = lru_cache(maxsize=_MEMO_ENTRIES)(_token_set)


#: scikit-learn's default ``token_pattern``, as its vectorizers compile it.
_SKLEARN_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def english_words(text: str) -> list[str]:
    """What scikit-learn's word analyzer with English stop words gives a ``str``
    (``CountVectorizer(stop_words="english").build_analyzer()``, the same for
    ``HashingVectorizer`` and ``TfidfVectorizer``): lowercase, ``token_pattern``, stop words
    dropped, unigrams in order. Relevance weighs these terms and the hashing embedder hashes
    them. Written out here because building the analyzer imports scikit-learn's estimator base,
    SciPy's ``stats`` and pandas (2.0-2.4 s of every scoring process's and worker's start,
    2026-11-30); ``tests/evaluators/test_relevance.py`` holds the tokens equal to the
    analyzer's on the data's texts."""
    stop = stop_words()
    words = _SKLEARN_TOKEN.findall(text_normalise.lower(text))
    return [word for word in words if word not in stop]
