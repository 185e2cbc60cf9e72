"""An exact byte form of an :class:`~verdictflow.evaluators.evidence_index.EvidenceIndex`, so a
context's index can be kept across restarts (:mod:`verdictflow.context_store`) instead of
being built again from the text.

Exact means: ``decode_index(encode_index(index), index.text) == index``, field for field and
value for value, on every real text tried (``tests/evaluators/test_evidence_codec.py``), so a
verdict cannot tell a stored index from a freshly built one. Decimals are written as their
``str`` (which keeps their digits and exponent: ``Decimal("1.50")`` stays ``1.50``), sets as
sorted lists (an index's sets are compared, never iterated for a result, so order carries no
meaning). The text is not stored: the store is keyed by the text's digest and the caller has
the text; decoding takes it back and checks every span against it.

The encoding is JSON (orjson): readable when debugging a store, and loading refuses anything
that is not exactly this format (:class:`ValueError`), so a damaged entry is rebuilt, never
trusted.
"""

from __future__ import annotations

import operator
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from verdictflow.evaluators.evidence_index import EvidenceIndex, SentenceLemmas
from verdictflow.evaluators.quantities import DatePoint, Quantity

#: Bumped whenever the byte form or the index's fields change; part of the store's key.
FORMAT = "verdictflow-evidence-index/1"


def encode_index(index: EvidenceIndex) -> bytes:
    """The index without its text, as compact JSON."""
    return orjson.dumps(
        {
            "f": FORMAT,
            "q": [[str(q.value), q.significant, q.percent, s, e] for q, s, e in index.quantities],
            "d": [[d.year, d.month, d.day, d.decade, s, e] for d, s, e in index.dates],
            "t": [[h, m, s, e] for (h, m), s, e in index.times],
            "w": list(index.words),
            "ws": [n for span in index.word_spans for n in span],
            "s": [[x.start, x.end, sorted(x.terms), sorted(x.negated)] for x in index.sentences],
            **_vocabulary(index),
        }
    )


def _vocabulary(index: EvidenceIndex) -> dict[str, list[str] | list[int]]:
    """Content unigrams (sorted), words only the bigrams have (none, when the index was built
    by this package: both come from one word list), and each bigram as two positions in their
    concatenation: decoding then builds the pairs in C, not word by word."""
    unigrams = sorted(index.content_unigrams)
    extra = sorted({w for pair in index.content_bigrams for w in pair} - index.content_unigrams)
    position = {w: i for i, w in enumerate(unigrams + extra)}
    pairs = sorted(index.content_bigrams)
    return {
        "u": unigrams,
        "x": extra,
        "b": [position[w] for pair in pairs for w in pair],
    }


def _int(value: Any) -> int:
    if type(value) is not int:
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _optional_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise ValueError(f"expected a boolean, got {value!r}")
    return value


def _all_of(kind: type, values: Any) -> bool:
    """Whether every item of ``values`` is exactly of ``kind`` (checked in C: an index has
    thousands of words, and a check per item in Python cost more than the JSON parse)."""
    return set(map(type, values)) <= {kind}


def _strings(value: Any) -> list[str]:
    if type(value) is not list or not _all_of(str, value):
        raise ValueError("expected a list of strings")
    return value


def _span(start: Any, end: Any, length: int) -> tuple[int, int]:
    s, e = _int(start), _int(end)
    if not 0 <= s <= e <= length:
        raise ValueError(f"span {s}-{e} outside a text of {length} characters")
    return s, e


def _spans(flat: Any, count: int, length: int) -> tuple[tuple[int, int], ...]:
    """``count`` spans from their flat list of offsets, each within the text, start <= end."""
    if type(flat) is not list or len(flat) != 2 * count or not _all_of(int, flat):
        raise ValueError("word spans do not match the words")
    starts, ends = flat[0::2], flat[1::2]
    if flat and (min(starts) < 0 or max(ends) > length or not all(map(operator.le, starts, ends))):
        raise ValueError(f"a word span outside a text of {length} characters")
    return tuple(zip(starts, ends, strict=True))


def _decimal(value: Any) -> Decimal:
    if type(value) is not str:
        raise ValueError(f"expected a decimal string, got {value!r}")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"not a decimal: {value!r}") from None
    if not number.is_finite():
        raise ValueError(f"not a finite decimal: {value!r}")
    return number


def _bigrams(flat: Any, vocabulary: list[str]) -> frozenset[tuple[str, str]]:
    """Word pairs from their flat list of positions in ``vocabulary``."""
    if type(flat) is not list or len(flat) % 2 or not _all_of(int, flat):
        raise ValueError("expected a flat list of word-pair positions")
    if flat and (min(flat) < 0 or max(flat) >= len(vocabulary)):
        raise ValueError("a word-pair position outside the vocabulary")
    words = list(map(vocabulary.__getitem__, flat))
    return frozenset(zip(words[0::2], words[1::2], strict=True))


def decode_index(body: bytes, text: str) -> EvidenceIndex:
    """The index ``encode_index`` wrote for ``text``; :class:`ValueError` when ``body`` is not
    one (damaged, another format, or spans that do not fit ``text``)."""
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(raw, dict) or raw.get("f") != FORMAT:
        raise ValueError(f"not a {FORMAT} record")
    n = len(text)
    try:
        quantities = tuple(
            (Quantity(_decimal(v), _int(sig), _bool(pct)), *_span(s, e, n))
            for v, sig, pct, s, e in raw["q"]
        )
        dates = tuple(
            (
                DatePoint(_optional_int(y), _optional_int(m), _optional_int(d), _bool(decade)),
                *_span(s, e, n),
            )
            for y, m, d, decade, s, e in raw["d"]
        )
        times = tuple(((_int(h), _int(m)), *_span(s, e, n)) for h, m, s, e in raw["t"])
        words = tuple(_strings(raw["w"]))
        spans = _spans(raw["ws"], len(words), n)
        sentences = tuple(
            SentenceLemmas(*_span(s, e, n), frozenset(_strings(terms)), frozenset(_strings(neg)))
            for s, e, terms, neg in raw["s"]
        )
        unigrams = _strings(raw["u"])
        bigrams = _bigrams(raw["b"], unigrams + _strings(raw["x"]))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed record: {exc!r}") from None
    return EvidenceIndex(
        text, quantities, dates, times, words, spans, sentences, frozenset(unigrams), bigrams
    )
