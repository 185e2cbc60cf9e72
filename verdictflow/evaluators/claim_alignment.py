"""Which context sentences back each claim of an answer: every claim's coverage by the context
sentences (:func:`claim_coverages`, computed once per answer by the analyzer) and its
best-supporting sentence or pair of sentences (:func:`best_alignment`,
:func:`supporting_sentences`), which the faithfulness signals compare it with and the relation
checks parse. Ties go to the earlier sentence, so the choice is deterministic.

Pure: plain values in, plain values out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verdictflow.evaluators.answer_claims import NEGATIONS, AnswerSentence, AnswerToken
from verdictflow.evaluators.evidence_index import EvidenceIndex, Span
from verdictflow.evaluators.sentence_alignment import SentenceCoverage, SentenceIndex


def found_in(token: AnswerToken, terms: frozenset[str]) -> bool:
    """Whether the word, or its lemma, is among ``terms``."""
    return token.lower in terms or token.lemma in terms


@dataclass(frozen=True, slots=True)
class ContextSentence:
    """One sentence of a context, as the alignment reads it."""

    context: int
    start: int
    end: int
    terms: frozenset[str]
    negated: bool


def context_sentences(contexts: Sequence[EvidenceIndex]) -> list[ContextSentence]:
    """Every context sentence. Negated if the index found a negated word, or if the sentence
    has one of the answer side's :data:`NEGATIONS` (the index only looks at not / n't / never)."""
    return [
        ContextSentence(
            i, s.start, s.end, s.terms, bool(s.negated) or not NEGATIONS.isdisjoint(s.terms)
        )
        for i, index in enumerate(contexts)
        for s in index.sentences
    ]


def best_alignment(
    sentence: AnswerSentence, candidates: Sequence[ContextSentence], coverage: SentenceCoverage
) -> tuple[float, list[ContextSentence]]:
    """Coverage of the answer sentence's content words by its best context sentence, and its
    best pair of sentences (the best one plus the one adding most): a summary sentence often
    joins two. Ties go to the earlier sentence, so the choice is deterministic."""
    if not sentence.tokens or not candidates:
        return 0.0, []
    best, second, held = coverage.best_pair()
    chosen = [candidates[best]] + ([candidates[second]] if second != best else [])
    return held / len(sentence.tokens), chosen


#: Each claim's coverage by the context sentences, by the claim's first character: computed
#: once by the analyzer (which needs each claim's best sentence to parse it) and reused by the
#: signals (:mod:`~verdictflow.evaluators.faithfulness_signals`).
Coverages = tuple[tuple[int, SentenceCoverage], ...]


def claim_coverages(
    sentences: Sequence[AnswerSentence], contexts: Sequence[EvidenceIndex]
) -> Coverages:
    """The coverage of every claim with content words by the context sentences (what
    :func:`~verdictflow.evaluators.faithfulness_signals.compute_signals` aligns; empty without
    contexts)."""
    candidates = context_sentences(contexts)
    claims = [s for s in sentences if s.claim and s.tokens]
    if not candidates or not claims:
        return ()
    index = SentenceIndex(
        [c.terms for c in candidates],
        [c.context for c in candidates],
        (w for s in claims for t in s.tokens for w in (t.lower, t.lemma)),
    )
    return tuple((s.start, index.coverage([(t.lower, t.lemma) for t in s.tokens])) for s in claims)


def supporting_sentences(
    sentences: Sequence[AnswerSentence],
    contexts: Sequence[EvidenceIndex],
    coverages: Coverages,
) -> list[tuple[int, Span] | None]:
    """For each answer sentence, its best-supporting context sentence (context number and
    span), as :func:`~verdictflow.evaluators.faithfulness_signals.compute_signals` chooses it;
    None for a sentence that is not a claim, has no content words, or no context. The analyzer
    parses these for the relation signals."""
    candidates = context_sentences(contexts)
    by_start = dict(coverages)
    out: list[tuple[int, Span] | None] = []
    for sentence in sentences:
        coverage = by_start.get(sentence.start)
        if coverage is None or not sentence.claim:
            out.append(None)
            continue
        _, chosen = best_alignment(sentence, candidates, coverage)
        out.append((chosen[0].context, (chosen[0].start, chosen[0].end)) if chosen else None)
    return out
