"""The bit-set sentence alignment against its direct definition, on random sets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from verdictflow.evaluators.evidence_index import EvidenceIndex
from verdictflow.evaluators.quantities import Quantity, parse_quantity
from verdictflow.evaluators.sentence_alignment import WINDOW, SentenceIndex

WORDS = st.sampled_from(["a", "b", "c", "d", "e", "f", "g"])
SENTENCE = st.frozensets(WORDS, max_size=5)


def direct(words: list[tuple[str, str]], terms: list[frozenset[str]], contexts: list[int]):
    """The definition: test every word against every sentence (and window)."""
    held = [frozenset(i for i, (w, m) in enumerate(words) if w in t or m in t) for t in terms]
    windows = []
    for c in range(len(terms)):
        union = set(held[c])
        for j in range(max(0, c - WINDOW), min(len(terms), c + WINDOW + 1)):
            if contexts[j] == contexts[c]:
                union |= held[j]
        windows.append(frozenset(union))
    best = max(range(len(terms)), key=lambda c: (len(held[c]), -c))
    second = max(range(len(terms)), key=lambda c: (len(held[best] | held[c]), -c))
    n = len(words)
    deficits = [0.0] * n
    if n >= 2:
        for i in range(n):
            around = [len(w) - 1 for w in windows if i in w]
            if around:
                without = max(len(w - {i}) for w in windows)
                deficits[i] = max(0, without - max(around)) / (n - 1)
    return (best, second, len(held[best])), deficits


@settings(max_examples=300)
@given(
    st.lists(st.tuples(WORDS, WORDS), min_size=1, max_size=70),
    st.lists(st.tuples(SENTENCE, st.integers(0, 2)), min_size=1, max_size=12),
)
def test_the_bit_set_coverage_is_the_definition(words, sentences) -> None:
    sentences.sort(key=lambda s: s[1])  # sentences of one context are consecutive
    terms = [t for t, _ in sentences]
    contexts = [c for _, c in sentences]
    index = SentenceIndex(terms, contexts, (w for pair in words for w in pair))
    coverage = index.coverage(words)
    assert (coverage.best_pair(), coverage.deficits()) == direct(words, terms, contexts)


def quantity_index(values: list[Quantity]) -> EvidenceIndex:
    spans = tuple((q, i, i + 1) for i, q in enumerate(values))
    return EvidenceIndex("", spans, (), (), (), (), (), frozenset(), frozenset())


@given(
    st.lists(
        st.sampled_from(["12", "12.0", "1,200", "1.2", "0", "1,249", "12%", "1250"]), max_size=8
    ),
    st.sampled_from(["12", "1,200", "1.2 million", "0", "12%", "1,250", "1.25"]),
)
def test_a_quantity_lookup_finds_what_the_scan_found(context, wanted) -> None:
    values = [q for q in (parse_quantity(t) for t in context) if q is not None]
    target = parse_quantity(wanted)
    assert target is not None
    scan = next(
        ((s, e) for q, s, e in quantity_index(values).quantities if target.matches(q)), None
    )
    assert quantity_index(values).find_quantity(target) == scan
