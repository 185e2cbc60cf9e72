"""How calibration scores a golden set of one kind with the production code.

Everything calibration needs to know about a kind (its event model, which side of the
threshold passes, its scale, where the threshold lives, what to load, its scorer) is the
registry's entry (:mod:`verdictflow.evaluators.kinds`); this module only loads what an entry
says it needs, once per scorer, and runs the entry's scorer over a list of events.

Calibration works in one *gate space* for every kind: higher passes, scores in [0, 1], DEFER
below everything (:meth:`KindSpec.to_gate`, :meth:`KindSpec.from_gate`), so the ROC code in
``evaluators/calibration`` is written once, and a hallucination threshold chosen there comes
back as "PASS at or below t".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from verdictflow.evaluators.kinds import BY_NAME, KindSpec, Need, Scope, UnknownKindError
from verdictflow.evaluators.kinds import spec_for as registry_spec
from verdictflow.evaluators.policy import Policy
from verdictflow.exceptions import VerdictflowError
from verdictflow.models.verdicts import Verdict

#: Every kind calibration accepts (all of the registry's).
KINDS = tuple(BY_NAME)
#: Scores a list of golden events (one verdict each, in order) under a policy.
BatchScorer = Callable[[Sequence[Any], Policy], list[Verdict]]


class CalibrationError(VerdictflowError):
    """A golden set or option that calibration cannot use."""


def spec_for(kind: str) -> KindSpec:
    """The registry entry of ``kind``, or a :class:`CalibrationError` naming the choices."""
    try:
        return registry_spec(kind)
    except UnknownKindError:
        raise CalibrationError(
            f"kind {kind!r} cannot be calibrated; kinds: " + ", ".join(KINDS)
        ) from None


def batch_scorer(kind: str, idf_stats: str | None = "default") -> BatchScorer:
    """The production scorer of ``kind``, loading spaCy and background statistics only when
    the kind needs them (and once per call of this function, or per policy)."""
    spec = spec_for(kind)
    if spec.scope is Scope.SUMMARY:
        return _judge_scorer(spec)
    return _answer_scorer(spec, idf_stats)


def _answer_scorer(spec: KindSpec, idf_stats: str | None) -> BatchScorer:
    from verdictflow.evaluators.answer_verdicts import ScoringContext
    from verdictflow.scoring_setup import load_scoring

    score_one = spec.score
    if score_one is None:
        raise CalibrationError(f"{spec.name} has no per-event scorer")
    loaded: dict[str, Any] = {}

    def score(events: Sequence[Any], policy: Policy) -> list[Verdict]:
        if loaded.get("policy") != policy:
            loaded["policy"] = policy
            if spec.needs:  # background statistics, or spaCy's version in the digest
                loaded["scoring"] = load_scoring(policy, idf_stats)
                loaded["ctx"] = loaded["scoring"].ctx
            else:
                loaded["ctx"] = ScoringContext(policy)
        ctx = loaded["ctx"]
        if Need.SPACY in spec.needs:
            parsed = loaded["scoring"].analyzer.analyze(events)
        else:
            parsed = [None] * len(events)
        return [score_one(e, p, ctx) for e, p in zip(events, parsed, strict=True)]

    return score


def _judge_scorer(spec: KindSpec) -> BatchScorer:
    from verdictflow.evaluators.summary_judges.verdicts import JudgeContext, score_batch
    from verdictflow.pipelines.summaries import spacy_parser

    parse, version = spacy_parser()
    judge = spec.judge or ""

    def score(events: Sequence[Any], policy: Policy) -> list[Verdict]:
        ctx = JudgeContext(policy.judge, version, policy.budget)
        return [v[0] for v in score_batch(events, parse, ctx, [judge])]

    return score
