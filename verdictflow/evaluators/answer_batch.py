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
from verdictflow.evaluators.kinds import Need, Tier, answer_kinds
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict


def score_answers(
    events: Sequence[AnswerEvent],
    ctx: ScoringContext,
    analyzer: AnswerAnalyzer,
    tier: Tier | None = None,
) -> list[list[Verdict]]:
    """The per-answer verdicts of each event (of ``tier``'s kinds, or all), one list per
    event, in input order. spaCy runs only when a kind that needs it is asked for."""
    kinds = answer_kinds(tier)
    parsed: Sequence[ParsedAnswer | None]
    if any(Need.SPACY in k.needs for k in kinds):
        parsed = analyzer.analyze(events)
    else:
        parsed = [None] * len(events)
    scorers = [k.score for k in kinds if k.score is not None]
    return [
        [score(event, answer, ctx) for score in scorers]
        for event, answer in zip(events, parsed, strict=True)
    ]
