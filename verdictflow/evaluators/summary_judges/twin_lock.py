"""Twin-Lock: five independent metrics with hard caps (spec 002, first variant).

Strict order: coverage, alignment, hallucination, relevance, bias-toxicity. Caps that depend
on a later metric (hallucination found -> coverage and relevance <= 4) are applied after all
five are computed, and recorded in the capped metric's ``caps``.
"""

from __future__ import annotations

from typing import Any

from verdictflow.evaluators.summary_judges import common
from verdictflow.evaluators.summary_judges.alignment import alignment
from verdictflow.evaluators.summary_judges.keypoints import extract_key_points, label_points, recall
from verdictflow.evaluators.summary_judges.rules import (
    Caps,
    clamp_score,
    harmonic_mean,
    mean,
    round_int,
)
from verdictflow.evaluators.summary_judges.text import Parsed
from verdictflow.evaluators.summary_judges.toxicity import bias_toxicity

NAME = "twin_lock"
KEY_POINTS = (3, 7)
INTENT_TOKENS = 40
THEME_TOKENS = 25
CAP = 4.0
RELEVANCE_VALUES = {"High": 1.0, "Some": 0.5, "None": 0.0}


def theme(article: Parsed, points: list[Any], limit: int) -> str:
    """The most central key point, cut to ``limit`` tokens: the article's focus in a line."""
    if not points:
        return ""
    best = max(points, key=lambda p: (p.rank_score, -p.sentence))
    return " ".join(best.text.split()[:limit])


def coverage(summary: Parsed, article: Parsed, shared: common.Shared) -> dict[str, Any]:
    points = extract_key_points(article, *KEY_POINTS)
    if not points:
        return common.error("no_key_points: no article sentence has 6 or more tokens")
    labelled = label_points(points, summary.keys)
    rec, prec = recall(labelled), shared.precision
    f1 = harmonic_mean(prec, rec)
    caps = Caps()
    score = caps.cap(f1 * 10, CAP, "extraneous_claim", shared.extraneous_claim)
    return {
        "key_points": labelled,
        "recall": round(rec, 4),
        "precision": round(prec, 4),
        "extraneous_tokens": common.extraneous_evidence(shared),
        "f1": round(f1, 4),
        "caps": caps.applied,
        "overall_score": clamp_score(score),
    }


def hallucination(shared: common.Shared) -> dict[str, Any]:
    if not shared.claims:
        return common.error("no_claims: no summary sentence has 2 or more content words")
    uf = shared.unsupported_fraction
    return {
        "claims": common.claims_evidence(shared),
        "unsupported_fraction": round(uf, 4),
        "caps": [],
        "overall_score": clamp_score(max(0, 10 - round_int(uf * 14))),
    }


def relevance(article: Parsed, shared: common.Shared, points: list[Any]) -> dict[str, Any]:
    if not shared.segments:
        return common.error("no_segments: no summary segment has 6 or more tokens")
    values = [RELEVANCE_VALUES[s.label] for s in shared.segments]
    caps = Caps()
    score = caps.cap(
        mean(values) * 10, CAP, "none_segment", "None" in {s.label for s in shared.segments}
    )
    return {
        "theme": theme(article, points, THEME_TOKENS),
        "segments": common.segments_evidence(shared),
        "mean_label_value": round(mean(values), 4),
        "caps": caps.applied,
        "overall_score": clamp_score(score),
    }


def judge(summary: Parsed, article: Parsed) -> dict[str, dict[str, Any]]:
    """The five Twin-Lock metric objects (or the spec's error objects), keyed by metric."""
    reason = common.input_error(summary, article)
    if reason is not None:
        return {m: common.error(reason) for m in common.METRICS}
    shared = common.analyse(summary, article)
    metrics: dict[str, dict[str, Any]] = {}
    metrics["coverage"] = coverage(summary, article, shared)
    metrics["alignment"] = {**alignment(summary, article, INTENT_TOKENS), "caps": []}
    metrics["hallucination"] = hallucination(shared)
    points = extract_key_points(article, *KEY_POINTS)
    metrics["relevance"] = relevance(article, shared, points)
    metrics["bias_toxicity"] = bias_toxicity(summary, judge_lock=False)
    if shared.extraneous_claim:  # global: hallucination found -> coverage & relevance <= 4
        for name in ("coverage", "relevance"):
            apply_cap(metrics[name], CAP, "hallucination_found")
    return metrics


def apply_cap(metric: dict[str, Any], limit: float, rule: str) -> None:
    """Cap an already-built metric object in place (no-op on an error object)."""
    if "overall_score" not in metric:
        return
    if metric["overall_score"] > limit:
        metric["caps"].append({"rule": rule, "limit": limit, "before": metric["overall_score"]})
        metric["overall_score"] = clamp_score(limit)
