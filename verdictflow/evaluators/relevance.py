"""Relevance (spec 003): (TF-IDF cosine(query, response) + Jaccard(query, response)) / 2.

TF-IDF over two strings is degenerate (a term in both gets the lowest weight, a term in one the
highest, whatever the words are), so term weights come from *background* document frequencies:
a statistics file built once from a document corpus (``verdictflow build-idf``), shipped with
a default, and recorded by digest in every verdict. The weighting is scikit-learn's: the
``TfidfVectorizer`` analyzer (lowercase, ``\\b\\w\\w+\\b`` tokens, English stop words ignored),
raw term counts, smooth IDF ``ln((1 + n) / (1 + df)) + 1`` and L2 normalisation, so with
background statistics built from corpus C the vectors equal those of a ``TfidfVectorizer``
fitted on C (a test checks it). Without statistics every term weighs 1: plain term-frequency
cosine over non-stop words.

Jaccard is over the spec tokenizer's word sets (the same sets Q1 and Q2 use).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import orjson

from verdictflow.evaluators.tokenize import english_words

STATS_FORMAT = "verdictflow-df/1"
ANALYZER_VERSION = "sklearn-word:(?u)\\b\\w\\w+\\b:lower:stop=english"


def analyze(text: str) -> list[str]:
    """scikit-learn's word analyzer with English stop words removed
    (:func:`~verdictflow.evaluators.tokenize.english_words`)."""
    return english_words(text)


@dataclass(frozen=True)
class BackgroundStats:
    """Document frequencies of terms in a background corpus of ``n_docs`` documents."""

    n_docs: int
    df: Mapping[str, int]
    min_df: int = 1
    source: str = ""
    digest: str = field(init=False)
    _idf_by_df: dict[int, float] = field(init=False, repr=False, compare=False)
    #: Weights of background terms already asked for (at most one per term of ``df``).
    _idf_by_term: dict[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", hashlib.sha256(self.to_json()).hexdigest())
        object.__setattr__(self, "_idf_by_df", {})
        object.__setattr__(self, "_idf_by_term", {})

    def idf(self, term: str) -> float:
        """scikit-learn's smooth IDF; a term never seen in the background weighs the most.
        Memoised by document frequency (a few thousand distinct values at most) and, for the
        background's own terms, by term: the same arithmetic on the same numbers, without a
        logarithm or two lookups per term per answer."""
        weight = self._idf_by_term.get(term)
        if weight is not None:
            return weight
        df = self.df.get(term, 0)
        weight = self._idf_by_df.get(df)
        if weight is None:
            weight = self._idf_by_df[df] = math.log((1 + self.n_docs) / (1 + df)) + 1.0
        if df:  # bounded by the background's vocabulary; unseen terms are not kept
            self._idf_by_term[term] = weight
        return weight

    def weights(self, counts: Mapping[str, int]) -> dict[str, float]:
        """``count * idf`` of each term, looked up in one pass (the lexical tier weighs two
        texts an answer)."""
        known, idf = self._idf_by_term.get, self.idf
        out = {}
        for term, n in counts.items():
            weight = known(term)
            out[term] = n * (weight if weight is not None else idf(term))
        return out

    def to_json(self) -> bytes:
        """Canonical bytes (sorted keys): the digest is over these, whatever the file's gzip."""
        payload = {
            "format": STATS_FORMAT,
            "analyzer": ANALYZER_VERSION,
            "n_docs": self.n_docs,
            "min_df": self.min_df,
            "source": self.source,
            "df": dict(sorted(self.df.items())),
        }
        return orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)

    @classmethod
    def from_json(cls, data: bytes) -> BackgroundStats:
        """Parse :meth:`to_json` output; ValueError with the reason when it is not that."""
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None
        if not isinstance(payload, dict) or payload.get("format") != STATS_FORMAT:
            raise ValueError(f"not a {STATS_FORMAT} statistics file")
        if payload.get("analyzer") != ANALYZER_VERSION:
            raise ValueError(
                f"built with analyzer {payload.get('analyzer')!r}, need {ANALYZER_VERSION!r}"
            )
        df = payload.get("df")
        n_docs = payload.get("n_docs")
        if not isinstance(df, dict) or not isinstance(n_docs, int) or n_docs < 1:
            raise ValueError("statistics need a positive n_docs and a df mapping")
        return cls(
            n_docs=n_docs,
            df={str(k): int(v) for k, v in df.items()},
            min_df=int(payload.get("min_df", 1)),
            source=str(payload.get("source", "")),
        )


def build_background_stats(
    texts: Iterable[str], *, min_df: int = 2, source: str = ""
) -> BackgroundStats:
    """Document frequencies over ``texts``; terms in fewer than ``min_df`` documents are
    dropped (they then weigh as unseen terms, which keeps the shipped file small)."""
    counts: Counter[str] = Counter()
    n_docs = 0
    for text in texts:
        n_docs += 1
        counts.update(set(analyze(text)))
    if n_docs == 0:
        raise ValueError("no documents to build statistics from")
    df = {term: n for term, n in counts.items() if n >= min_df}
    return BackgroundStats(n_docs=n_docs, df=df, min_df=min_df, source=source)


def tfidf_vector(text: str, stats: BackgroundStats | None) -> dict[str, float]:
    """L2-normalised TF-IDF weights of ``text`` (empty when it has no non-stop word)."""
    counts: dict[str, int] = {}
    seen = counts.get
    for term in analyze(text):  # a Counter, without its type checks (half its time)
        counts[term] = seen(term, 0) + 1
    weights = (
        stats.weights(counts) if stats is not None else {t: n * 1.0 for t, n in counts.items()}
    )
    norm = math.sqrt(math.fsum([w * w for w in weights.values()]))
    return {term: w / norm for term, w in weights.items()} if norm > 0 else {}


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    if len(b) < len(a):
        a, b = b, a
    return min(1.0, math.fsum(w * b[t] for t, w in a.items() if t in b))


@dataclass(frozen=True, slots=True)
class RelevanceResult:
    score: float
    cosine: float
    jaccard: float
    shared_terms: tuple[str, ...]


def relevance(
    query: str,
    response: str,
    query_tokens: frozenset[str],
    response_tokens: frozenset[str],
    stats: BackgroundStats | None,
) -> RelevanceResult:
    """The spec's hybrid score; the token sets are the spec tokenizer's, for the Jaccard part."""
    q_vec, r_vec = tfidf_vector(query, stats), tfidf_vector(response, stats)
    cos = cosine(q_vec, r_vec)
    union = query_tokens | response_tokens
    jac = len(query_tokens & response_tokens) / len(union) if union else 0.0
    shared = tuple(sorted(set(q_vec) & set(r_vec), key=lambda t: (-q_vec[t] * r_vec[t], t)))
    return RelevanceResult((cos + jac) / 2, cos, jac, shared)
