"""Every per-answer verdict for a batch of answers, for one tier or all: the answers agents and
``verdictflow eval answers`` all call :func:`score_answers`, which is what keeps streamed and
offline verdicts byte-identical. Which kinds there are, their tiers and scorers are the
registry's (:mod:`verdictflow.evaluators.kinds`); consistency is scored per request, after
routing (:mod:`verdictflow.evaluators.variant_groups`), not here.
"""

from __future__ import annotations

from collections.abc import Sequence

from verdictflow.evaluators.answer_analysis import AnswerAnalyzer, ParsedAnswer
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.evaluators.deferrals import (
    Deferral,
    deferred_verdict,
    over_budget,
    unsupported_language,
)
from verdictflow.evaluators.kinds import KindSpec, Need, Tier, answer_kinds
from verdictflow.evaluators.normalised_events import TextMaps, normalised_event, original_offsets
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict


def score_answers(
    events: Sequence[AnswerEvent],
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
    tier: Tier | None = None,
    kinds: Sequence[KindSpec] | None = None,
) -> list[list[Verdict]]:
    """The per-answer verdicts of each event (of ``tier``'s kinds, or all, or ``kinds``), one
    list per event, in input order.

    Every scorer reads the event with its text normalised
    (:mod:`~verdictflow.evaluators.normalised_events`), and evidence spans are given back in
    the original text. spaCy runs only when a kind that needs it is asked for, and only on
    answers it can read within the policy's budget (:mod:`~verdictflow.evaluators.deferrals`):
    an answer over the budget DEFERs ``too_long_for_nlp`` from its spaCy kinds, one in another
    script ``unsupported_language`` from every kind."""
    chosen = [k for k in (answer_kinds(tier) if kinds is None else kinds) if k.score is not None]
    normalised = [normalised_event(e) for e in events]
    clean = [event for event, _ in normalised]
    parsing = any(Need.SPACY in k.needs for k in chosen)
    over = [_deferral(e, ctx, parsing) for e in clean]
    parsed: list[ParsedAnswer | None] = [None] * len(clean)
    if parsing:
        within = [i for i, why in enumerate(over) if why is None]
        for i, answer in zip(within, analyzer.analyze([clean[i] for i in within]), strict=True):
            parsed[i] = answer
    return [
        [_in_original(_score(kind, event, answer, why, ctx), maps) for kind in chosen]
        for (event, maps), answer, why in zip(normalised, parsed, over, strict=True)
    ]


def _deferral(event: AnswerEvent, ctx: ScoringContext, parsing: bool) -> Deferral | None:
    language = unsupported_language(event)
    if language is not None:
        return language
    return over_budget(event, ctx.policy.budget) if parsing else None


def _score(
    kind: KindSpec,
    event: AnswerEvent,
    answer: ParsedAnswer | None,
    why: Deferral | None,
    ctx: ScoringContext,
) -> Verdict:
    assert kind.score is not None
    parses = Need.SPACY in kind.needs
    if why is not None and (parses or not why.parsing_kinds_only):
        return deferred_verdict(kind.kind, kind.threshold(ctx.policy), parses, event, why, ctx)
    return kind.score(event, answer, ctx)


def _in_original(verdict: Verdict, maps: TextMaps) -> Verdict:
    if not maps.changed:
        return verdict
    return verdict.model_copy(update={"evidence": original_offsets(verdict.evidence, maps)})
