"""Every per-answer verdict for a batch of answers: groundedness, relevance, completeness and
hallucination, in that order. The answers agent and ``verdictflow eval answers`` both call
:func:`score_answers`, which is what keeps streamed and offline verdicts byte-identical.
"""

from __future__ import annotations

from collections.abc import Sequence

from verdictflow.evaluators.answer_analysis import AnswerAnalyzer
from verdictflow.evaluators.answer_quality_verdicts import (
    score_completeness,
    score_hallucination,
    score_relevance,
)
from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict


def score_answers(
    events: Sequence[AnswerEvent], ctx: ScoringContext, analyzer: AnswerAnalyzer
) -> list[list[Verdict]]:
    """The per-answer verdicts of each event, one list per event, in input order."""
    parsed = analyzer.analyze(events)
    return [
        [
            score_groundedness(event, ctx),
            score_relevance(event, ctx),
            score_completeness(event, ctx),
            score_hallucination(event, answer, ctx),
        ]
        for event, answer in zip(events, parsed, strict=True)
    ]
