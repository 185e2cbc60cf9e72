"""Hallucination (spec 003): max(claim error, topic-drift penalty); lower is better.

Claim error = unsupported anchors / all anchors, where each anchor is searched in the contexts
with normalisation: numbers as values (at the precision the answer states them), dates and
times as calendar components, entities as word sequences (a person also by surname), claims as
lemmas of subject, verb and object within one context sentence, with the same polarity.

A claim whose subject and object share a context sentence but whose verb does not counts half
(``partial``): lexical matching cannot tell a paraphrased verb ("rose" / "increased") from a
contradicting one, and counting it either way is wrong half the time.

Topic drift: the share of the answer's content unigrams and bigrams found in the contexts (the
mean of the two shares; unigrams alone for a one-word answer). Below ``drift_min_overlap`` the
penalty is ``drift_penalty`` (spec: 0.2 below 0.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from verdictflow.evaluators.anchors import LIGHT_VERBS, Anchor, HedgedClaim
from verdictflow.evaluators.evidence_index import EvidenceIndex, Span, bigrams, context_excerpt

Support = Literal["supported", "partial", "unsupported"]
SUPPORT_WEIGHT: dict[Support, float] = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}


@dataclass(frozen=True, slots=True)
class AnchorCheck:
    """An anchor and where (if anywhere) the contexts support it."""

    anchor: Anchor
    support: Support
    context: int | None = None
    span: Span | None = None

    def evidence(self, contexts: Sequence[EvidenceIndex]) -> dict[str, Any]:
        record: dict[str, Any] = {
            "kind": self.anchor.kind,
            "label": self.anchor.label,
            "text": self.anchor.text,
            "start": self.anchor.start,
            "end": self.anchor.end,
            "support": self.support,
        }
        if self.context is not None and self.span is not None:
            record["context"] = context_excerpt(contexts, self.context, self.span)
        return record


@dataclass(frozen=True, slots=True)
class HallucinationResult:
    score: float | None
    claim_error: float | None
    overlap: float
    penalty: float
    checks: tuple[AnchorCheck, ...]
    hedged: tuple[HedgedClaim, ...]


def _find_number(anchor: Anchor, index: EvidenceIndex) -> Span | None:
    if anchor.quantity is None:
        return index.find_phrase(anchor.words)
    return index.find_quantity(anchor.quantity)


def _find_date(anchor: Anchor, index: EvidenceIndex) -> Span | None:
    point = anchor.date
    if point is None or point.empty:
        return index.find_phrase(anchor.words)
    for other, start, end in index.dates:
        if point.within(other):
            return start, end
    if point.month is None and point.day is None and point.year is not None:
        for quantity, start, end in index.quantities:  # a year the NER did not label DATE
            if not point.decade and not quantity.percent and quantity.value == point.year:
                return start, end
    return None


def _find_time(anchor: Anchor, index: EvidenceIndex) -> Span | None:
    if anchor.time is None:
        return index.find_phrase(anchor.words)
    for clock, start, end in index.times:
        if clock == anchor.time:
            return start, end
    return None


def _find_entity(anchor: Anchor, index: EvidenceIndex) -> Span | None:
    """The name as written; a person by their surname; a one-word name as the acronym of a
    name the context spells out ("US" for "the United States")."""
    span = index.find_phrase(anchor.words)
    if span is None and anchor.label == "PERSON" and len(anchor.words) > 1:
        span = index.find_phrase(anchor.words[-1:])
    if span is None and len(anchor.words) == 1:
        span = index.find_acronym(anchor.words[0])
    return span


def _find_claim(anchor: Anchor, index: EvidenceIndex) -> tuple[Support, Span | None]:
    claim = anchor.claim
    assert claim is not None
    light = claim.verb in LIGHT_VERBS
    best: tuple[Support, Span | None] = ("unsupported", None)
    for sentence in index.sentences:
        terms = sentence.terms
        if claim.obj not in terms or (claim.subject is not None and claim.subject not in terms):
            continue
        verb_found = light or claim.verb in terms
        negated = bool(sentence.negated) if light else claim.verb in sentence.negated
        span = (sentence.start, sentence.end)
        if verb_found and negated == claim.negated:
            return "supported", span
        if best[0] == "unsupported" and negated == claim.negated:
            best = ("partial", span)
    return best


def _find_term(anchor: Anchor, index: EvidenceIndex) -> Span | None:
    words = anchor.words
    for sentence in index.sentences:
        if not sentence.terms.isdisjoint(words):  # a set operation, not a generator per sentence
            return sentence.start, sentence.end
    return None


_FINDERS = {
    "number": _find_number,
    "date": _find_date,
    "time": _find_time,
    "entity": _find_entity,
    "term": _find_term,
}


def check_anchor(anchor: Anchor, contexts: Sequence[EvidenceIndex]) -> AnchorCheck:
    """The first context (in order) that supports ``anchor``, else the best partial one."""
    partial: AnchorCheck | None = None
    for i, index in enumerate(contexts):
        if anchor.kind == "claim":
            support, span = _find_claim(anchor, index)
            if support == "supported":
                return AnchorCheck(anchor, support, i, span)
            if support == "partial" and partial is None:
                partial = AnchorCheck(anchor, support, i, span)
            continue
        finder = _FINDERS[anchor.kind]
        found = finder(anchor, index)
        if found is not None:
            return AnchorCheck(anchor, "supported", i, found)
    return partial or AnchorCheck(anchor, "unsupported")


def drift_overlap(answer_words: Sequence[str], contexts: Sequence[EvidenceIndex]) -> float:
    """Mean share of the answer's content unigrams and bigrams that occur in the contexts.

    An answer with no content word ("nine", "yes") cannot drift: its overlap is 1.0.
    """
    unigrams = set(answer_words)
    if not unigrams:
        return 1.0
    context_unigrams = frozenset().union(*(c.content_unigrams for c in contexts))
    shares = [len(unigrams & context_unigrams) / len(unigrams)]
    answer_bigrams = bigrams(answer_words)
    if answer_bigrams:
        context_bigrams = frozenset().union(*(c.content_bigrams for c in contexts))
        shares.append(len(answer_bigrams & context_bigrams) / len(answer_bigrams))
    return sum(shares) / len(shares)


def hallucination(
    anchors: Sequence[Anchor],
    hedged: Sequence[HedgedClaim],
    answer_words: Sequence[str],
    contexts: Sequence[EvidenceIndex],
    *,
    drift_min_overlap: float = 0.2,
    drift_penalty: float = 0.2,
) -> HallucinationResult:
    """Score an answer's anchors against its contexts; ``score`` None when there is no anchor."""
    checks = tuple(check_anchor(anchor, contexts) for anchor in anchors)
    overlap = drift_overlap(answer_words, contexts)
    penalty = drift_penalty if overlap < drift_min_overlap else 0.0
    if not checks:
        return HallucinationResult(None, None, overlap, penalty, (), tuple(hedged))
    supported = sum(SUPPORT_WEIGHT[c.support] for c in checks)
    claim_error = (len(checks) - supported) / len(checks)
    return HallucinationResult(
        max(claim_error, penalty), claim_error, overlap, penalty, checks, tuple(hedged)
    )
