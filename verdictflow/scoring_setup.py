"""Build what scoring needs once per process: the policy's context, the relevance statistics
and the spaCy analyzer. Workers, ``eval answers``, ``dev`` and the validation scripts all call
:func:`load_scoring`, so they share one config digest for one configuration."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verdictflow.background import resolve_stats
from verdictflow.evaluators import relevance
from verdictflow.evaluators.answer_analysis import COMPONENTS, AnswerAnalyzer
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.evaluators.policy import Policy
from verdictflow.nlp import load_pipeline, pipeline_version


@dataclass(frozen=True)
class Scoring:
    ctx: ScoringContext
    analyzer: AnswerAnalyzer


def load_scoring(policy: Policy, idf_stats: str | Path | None = "default") -> Scoring:
    """The scoring context and analyzer for ``policy`` (spaCy is loaded once per process)."""
    nlp = load_pipeline(COMPONENTS)
    ctx = ScoringContext(
        policy, background=resolve_stats(idf_stats), nlp_version=pipeline_version(nlp)
    )
    analyzer = AnswerAnalyzer(
        nlp,
        entity_anchors=policy.hallucination.entity_anchors,
        term_anchors=policy.hallucination.term_anchors,
    )
    relevance.analyze("warm up")  # import scikit-learn now, not inside the first batch
    return Scoring(ctx, analyzer)
