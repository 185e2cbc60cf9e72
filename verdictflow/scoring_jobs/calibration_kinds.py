"""What calibration needs to know about each verdict kind: how to score a golden set with the
production code, which side of the threshold passes, the score's scale, and where the threshold
lives in the policy.

Calibration works in one *gate space* for every kind: higher passes, scores in [0, 1], DEFER
below everything. ``to_gate`` and ``from_gate`` convert: hallucination (lower is better) is
flipped, ``1 - s``; judge scores (0-10) are divided by 10. So the ROC code in
``evaluators/calibration`` is written once, and a hallucination threshold chosen there comes
back as "PASS at or below t".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from verdictflow.evaluators.calibration import DEFER_SCORE
from verdictflow.evaluators.policy import Policy
from verdictflow.exceptions import VerdictflowError
from verdictflow.models.events import AnswerEvent, SummaryEvent
from verdictflow.models.verdicts import Decision, Verdict

ANSWER_KINDS = ("groundedness", "consistency", "relevance", "completeness", "hallucination")
JUDGE_KINDS = ("judge.twin_lock", "judge.judge_lock")
KINDS = ANSWER_KINDS + JUDGE_KINDS
#: Perturbations for scorers on spaCy's cased model (why: ``evaluators/perturb``).
MODEL_PERTURBATIONS = frozenset({"spacing", "order", "duplicate_context"})
#: Scores a list of golden events (one verdict each, in order) under a policy.
BatchScorer = Callable[[Sequence[Any], Policy], list[Verdict]]


class CalibrationError(VerdictflowError):
    """A golden set or option that calibration cannot use."""


@dataclass(frozen=True)
class KindSpec:
    name: str
    event_model: type[BaseModel]
    direction: Literal["higher", "lower"]
    scale: float  # the score's upper bound: 1 for answer kinds, 10 for judges
    perturbations: frozenset[str] | None = None  # None: all of them (see evaluators/perturb)

    def to_gate(self, verdict: Verdict) -> float:
        """The verdict's score in gate space; a DEFER never passes."""
        if verdict.decision is Decision.DEFER or verdict.score is None:
            return DEFER_SCORE
        unit = verdict.score / self.scale
        return 1.0 - unit if self.direction == "lower" else unit

    def from_gate(self, value: float) -> float:
        """A gate-space threshold in the kind's own units (rounded to 12 decimals, so 1 - 0.7
        is written as 0.3)."""
        unit = 1.0 - value if self.direction == "lower" else value
        return round(min(max(unit, 0.0), 1.0) * self.scale, 12)

    def set_threshold(self, data: dict[str, Any], threshold: float) -> None:
        """Write ``threshold`` where the agents read it, in a policy's JSON form."""
        if self.name.startswith("judge."):
            judge = data["judge"]
            judge["thresholds"] = {**judge["thresholds"], self.name.split(".", 1)[1]: threshold}
        else:
            data[self.name] = {**data[self.name], "threshold": threshold}


def spec_for(kind: str) -> KindSpec:
    if kind not in KINDS:
        raise CalibrationError(f"kind {kind!r} cannot be calibrated; kinds: " + ", ".join(KINDS))
    if kind in JUDGE_KINDS:
        return KindSpec(kind, SummaryEvent, "higher", 10.0, MODEL_PERTURBATIONS)
    if kind == "hallucination":
        return KindSpec(kind, AnswerEvent, "lower", 1.0, MODEL_PERTURBATIONS)
    return KindSpec(kind, AnswerEvent, "higher", 1.0)


def batch_scorer(kind: str, idf_stats: str | None = "default") -> BatchScorer:
    """The production scorer of ``kind``, loading spaCy and background statistics only for the
    kinds that need them (and once per call of this function)."""
    if kind in ("groundedness", "consistency"):
        from verdictflow.evaluators import variant_groups as vg
        from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness

        single = score_groundedness if kind == "groundedness" else vg.score_self_contained

        def lexical(events: Sequence[Any], policy: Policy) -> list[Verdict]:
            ctx = ScoringContext(policy)
            return [single(e, ctx) for e in events]

        return lexical
    if kind in ("relevance", "completeness", "hallucination"):
        return _answer_quality_scorer(kind, idf_stats)
    return _judge_scorer(kind.split(".", 1)[1])


def _answer_quality_scorer(kind: str, idf_stats: str | None) -> BatchScorer:
    from verdictflow.evaluators.answer_batch import ANSWER_KINDS, score_answers
    from verdictflow.scoring_setup import load_scoring

    tier = next(k.tier for k in ANSWER_KINDS if k.kind == kind)
    loaded: dict[str, Any] = {}

    def score(events: Sequence[Any], policy: Policy) -> list[Verdict]:
        if loaded.get("policy") != policy:
            loaded["policy"], loaded["scoring"] = policy, load_scoring(policy, idf_stats)
        scoring = loaded["scoring"]
        scored = score_answers(events, scoring.ctx, scoring.analyzer, tier)
        return [next(v for v in verdicts if v.kind == kind) for verdicts in scored]

    return score


def _judge_scorer(judge: str) -> BatchScorer:
    from verdictflow.evaluators.judge.verdicts import JudgeContext, score_batch
    from verdictflow.summary_scoring import spacy_parser

    parse, version = spacy_parser()

    def score(events: Sequence[Any], policy: Policy) -> list[Verdict]:
        ctx = JudgeContext(policy.judge, version)
        return [v[0] for v in score_batch(events, parse, ctx, [judge])]

    return score
