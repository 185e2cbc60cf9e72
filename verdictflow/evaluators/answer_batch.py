"""Every per-answer verdict for a batch of answers, by tier: the kinds, in the order they are
emitted, and what each needs. The answers agents and ``verdictflow eval answers`` all call
:func:`score_answers`, which is what keeps streamed and offline verdicts byte-identical.

Tiers split the kinds by cost. The **lexical** tier (groundedness, relevance, completeness)
needs only tokens and lookups, ~80 us per answer; the **NLP** tier (hallucination) needs the
spaCy parse of the answer, milliseconds per answer. On the stream each tier is its own consumer
group, so a backlog of parses never holds back a lexical verdict (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from verdictflow.evaluators.answer_analysis import AnswerAnalyzer, ParsedAnswer
from verdictflow.evaluators.answer_quality_verdicts import (
    score_completeness,
    score_hallucination,
    score_relevance,
)
from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict, VerdictKind


class Tier(StrEnum):
    """Which answers agent (and consumer group) computes a kind."""

    LEXICAL = "lexical"
    NLP = "nlp"


@dataclass(frozen=True)
class AnswerKind:
    """A per-answer verdict kind: its tier, and its scorer (which gets the answer's parse
    when the kind is in the NLP tier, None otherwise)."""

    kind: VerdictKind
    tier: Tier
    score: Callable[[AnswerEvent, ParsedAnswer | None, ScoringContext], Verdict]


def _hallucination(event: AnswerEvent, parsed: ParsedAnswer | None, ctx: ScoringContext) -> Verdict:
    if parsed is None:
        raise ValueError("hallucination needs the answer's parse")
    return score_hallucination(event, parsed, ctx)


#: The per-answer kinds, in emission order (consistency is scored per request, not here).
ANSWER_KINDS: tuple[AnswerKind, ...] = (
    AnswerKind(VerdictKind.GROUNDEDNESS, Tier.LEXICAL, lambda e, p, c: score_groundedness(e, c)),
    AnswerKind(VerdictKind.RELEVANCE, Tier.LEXICAL, lambda e, p, c: score_relevance(e, c)),
    AnswerKind(VerdictKind.COMPLETENESS, Tier.LEXICAL, lambda e, p, c: score_completeness(e, c)),
    AnswerKind(VerdictKind.HALLUCINATION, Tier.NLP, _hallucination),
)


def kinds_of(tier: Tier | None) -> tuple[AnswerKind, ...]:
    """The kinds one tier computes; every kind for ``None`` (offline evaluation)."""
    return tuple(k for k in ANSWER_KINDS if tier is None or k.tier is tier)


def score_answers(
    events: Sequence[AnswerEvent],
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
    tier: Tier | None = None,
) -> list[list[Verdict]]:
    """The per-answer verdicts of each event (of ``tier``'s kinds, or all), one list per
    event, in input order. spaCy runs only when an NLP-tier kind is asked for."""
    kinds = kinds_of(tier)
    parsed: Sequence[ParsedAnswer | None]
    if any(k.tier is Tier.NLP for k in kinds):
        parsed = analyzer.analyze(events)
    else:
        parsed = [None] * len(events)
    return [
        [k.score(event, answer, ctx) for k in kinds]
        for event, answer in zip(events, parsed, strict=True)
    ]
