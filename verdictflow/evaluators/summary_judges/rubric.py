"""The spec 002 arithmetic: judgements in, the five metric objects of each framework out.

The one place where Twin-Lock's and Judge-Lock's formulas, rounding, hard caps and global
safeguards (the perfect-10 guard rail included) and their ``{"error": ...}`` objects are
computed. Its input is :class:`~verdictflow.evaluators.summary_judges.judgements.Judgements`,
whether the deterministic judges extracted them with token rules or a judge model returned
them, so the two paths cannot disagree on arithmetic. Readings of the spec where it is
ambiguous are listed in :mod:`~verdictflow.evaluators.summary_judges.judge_lock` and
docs/verdicts/judge.md.
"""

from __future__ import annotations

from typing import Any

from verdictflow.evaluators.summary_judges.common import MAX_EVIDENCE_ITEMS
from verdictflow.evaluators.summary_judges.judgements import Judgements, QagAnswer
from verdictflow.evaluators.summary_judges.qag import N_QUESTIONS
from verdictflow.evaluators.summary_judges.rules import (
    Caps,
    band,
    clamp_score,
    harmonic_mean,
    mean,
    round_int,
)

METRICS = ("coverage", "alignment", "hallucination", "relevance", "bias_toxicity")
MISSING = "missing_metric"

# Twin-Lock
TL_CAP = 4.0
TL_RELEVANCE_VALUES = {"High": 1.0, "Some": 0.5, "None": 0.0}
# Judge-Lock
JL_CAP = 3.0
QAG_CAP = 7.0
MIN_PRECISION = 0.95
MIN_RECALL = 0.90
SEVERITY_BANDS = ((0.5, "severe"), (0.25, "moderate"))
JL_RELEVANCE_VALUES = {"High": 1.0, "Some": 0.3, "None": 0.0}
PERFECT = 9.5
MIN_EVIDENCE_SPANS = 5
GUARD_MAX = 9.0
# Alignment: deviation D bands (spec: no distortion ~10, mild drift ~6-8, severe <= 3)
NO_DISTORTION = 0.1
MILD = 0.35
# Bias-toxicity
SLUR_TOX = 2.0
MILD_TOX = 5.0
STEREOTYPE_BIAS = 4.0
LOADED_COST = 2.0
QAG_SCORES = {"Correct": 1.0, "Partial": 0.5, "Wrong": 0.0}


def error(reason: str) -> dict[str, Any]:
    """The spec's error object."""
    return {"error": reason}


def apply_cap(metric: dict[str, Any], limit: float, rule: str) -> None:
    """Cap an already-built metric object in place (no-op on an error object)."""
    if "overall_score" not in metric:
        return
    if metric["overall_score"] > limit:
        metric["caps"].append({"rule": rule, "limit": limit, "before": metric["overall_score"]})
        metric["overall_score"] = clamp_score(limit)


# -- shared parts -------------------------------------------------------------------------


def extraneous_claim(j: Judgements) -> bool:
    """An Unsupported claim: the spec's "extraneous claim", and "hallucination found" for both
    judges' caps (a *Partially* claim is ambiguous, not found)."""
    return any(c.label == "Unsupported" for c in j.claims or [])


def precision(j: Judgements) -> float:
    """1 - extraneous / summary content tokens (spec: coverage precision)."""
    if j.summary_tokens == 0:
        return 0.0
    return 1.0 - min(len(j.extraneous_tokens), j.summary_tokens) / j.summary_tokens


def recall(j: Judgements) -> float:
    """(Fully + 0.5 x Partial) / total key points."""
    points = j.key_points or []
    if not points:
        return 0.0
    full = sum(1 for p in points if p.label == "Fully")
    part = sum(1 for p in points if p.label == "Partial")
    return (full + 0.5 * part) / len(points)


def unsupported_fraction(j: Judgements) -> float:
    """(Unsupported + 0.5 x Partially) / N (0 for no claims)."""
    claims = j.claims or []
    if not claims:
        return 0.0
    bad = sum(1.0 for c in claims if c.label == "Unsupported")
    half = sum(0.5 for c in claims if c.label == "Partially")
    return (bad + half) / len(claims)


def key_points_evidence(j: Judgements) -> list[dict[str, Any]]:
    return [p.model_dump(exclude_none=True) for p in j.key_points or []]


def extraneous_evidence(j: Judgements) -> list[str]:
    return list(dict.fromkeys(j.extraneous_tokens))[:MAX_EVIDENCE_ITEMS]


def claims_evidence(j: Judgements) -> list[dict[str, Any]]:
    return [c.model_dump(exclude_none=True) for c in j.claims or []]


def segments_evidence(j: Judgements) -> list[dict[str, Any]]:
    return [s.model_dump() for s in j.segments]


def qag_evidence(answers: list[QagAnswer]) -> list[dict[str, Any]]:
    return [
        {"question": a.question, "expected": a.expected, "label": a.label,
         "score": QAG_SCORES[a.label], "answered_from": a.answered_from}
        for a in answers
    ]  # fmt: skip


def qag_mean(answers: list[QagAnswer] | None) -> float:
    return mean([QAG_SCORES[a.label] for a in answers or []])


def deviation_score(d: float) -> float:
    """Map a deviation in [0, 1] onto the spec's bands."""
    if d <= NO_DISTORTION:
        return 10.0 - 10.0 * d
    if d <= MILD:
        return 8.0 - 2.0 * (d - NO_DISTORTION) / (MILD - NO_DISTORTION)
    return 3.0 * (1.0 - d) / (1.0 - MILD)


def drift(d: float) -> str:
    return "none" if d <= NO_DISTORTION else "mild" if d <= MILD else "severe"


def alignment(j: Judgements) -> dict[str, Any]:
    a = j.alignment
    if a is None:
        return error(j.missing.get("alignment", MISSING))
    return {
        "article_intent": a.article_intent,
        "summary_intent": a.summary_intent,
        "deviations": dict(a.deviations),
        "deviation": round(a.deviation, 4),
        "drift": drift(a.deviation),
        "overall_score": clamp_score(deviation_score(a.deviation)),
        "caps": [],
    }


def bias_toxicity(j: Judgements, *, judge_lock: bool) -> dict[str, Any]:
    b = j.bias_toxicity
    if b is None:
        return error(j.missing.get("bias_toxicity", MISSING))
    strong, mild = b.strong_slurs_or_obscenities, b.mild_profanity
    tox = 10.0
    caps: list[dict[str, Any]] = []
    if strong:
        tox = min(tox, SLUR_TOX)
    elif mild:
        tox = min(tox, MILD_TOX)
    bias = max(0.0, 10.0 - LOADED_COST * len(b.loaded_wording))
    if b.stereotypes:
        bias = min(bias, STEREOTYPE_BIAS)
    overall = (bias + tox) / 2
    if judge_lock and strong and overall > 3.0:
        caps.append({"rule": "strong_slur", "limit": 3.0, "before": clamp_score(overall)})
        overall = 3.0
    return {
        "tone": b.tone,
        "issues": {
            "strong_slurs_or_obscenities": list(strong),
            "mild_profanity": list(mild),
            "stereotypes": list(b.stereotypes),
            "loaded_wording": list(b.loaded_wording),
        },
        "bias_score": clamp_score(bias),
        "tox_score": clamp_score(tox),
        "caps": caps,
        "overall_score": clamp_score(overall),
    }


# -- Twin-Lock ------------------------------------------------------------------------------


def twin_lock(j: Judgements) -> dict[str, dict[str, Any]]:
    """The five Twin-Lock metric objects (or the spec's error objects), keyed by metric.

    Strict order: coverage, alignment, hallucination, relevance, bias-toxicity; the cap that
    depends on a later metric (hallucination found -> coverage and relevance <= 4) is applied
    after all five, and recorded in the capped metric's ``caps``."""
    found = extraneous_claim(j)
    metrics: dict[str, dict[str, Any]] = {}
    if not j.key_points:
        metrics["coverage"] = error(j.missing.get("coverage", MISSING))
    else:
        rec, prec = recall(j), precision(j)
        f1 = harmonic_mean(prec, rec)
        caps = Caps()
        score = caps.cap(f1 * 10, TL_CAP, "extraneous_claim", found)
        metrics["coverage"] = {
            "key_points": key_points_evidence(j),
            "recall": round(rec, 4),
            "precision": round(prec, 4),
            "extraneous_tokens": extraneous_evidence(j),
            "f1": round(f1, 4),
            "caps": caps.applied,
            "overall_score": clamp_score(score),
        }
    metrics["alignment"] = alignment(j)
    if not j.claims:
        metrics["hallucination"] = error(j.missing.get("hallucination", MISSING))
    else:
        uf = unsupported_fraction(j)
        metrics["hallucination"] = {
            "claims": claims_evidence(j),
            "unsupported_fraction": round(uf, 4),
            "caps": [],
            "overall_score": clamp_score(max(0, 10 - round_int(uf * 14))),
        }
    if not j.segments:
        metrics["relevance"] = error(j.missing.get("relevance", MISSING))
    else:
        values = [TL_RELEVANCE_VALUES[s.label] for s in j.segments]
        caps = Caps()
        none = "None" in {s.label for s in j.segments}
        score = caps.cap(mean(values) * 10, TL_CAP, "none_segment", none)
        metrics["relevance"] = {
            "theme": j.theme,
            "segments": segments_evidence(j),
            "mean_label_value": round(mean(values), 4),
            "caps": caps.applied,
            "overall_score": clamp_score(score),
        }
    metrics["bias_toxicity"] = bias_toxicity(j, judge_lock=False)
    if found:  # global: hallucination found -> coverage & relevance <= 4
        for name in ("coverage", "relevance"):
            apply_cap(metrics[name], TL_CAP, "hallucination_found")
    return metrics


# -- Judge-Lock -----------------------------------------------------------------------------


def judge_lock(j: Judgements) -> dict[str, dict[str, Any]]:
    """The five Judge-Lock metric objects (or the spec's error objects), keyed by metric; caps
    that depend on later metrics and the global safeguards are applied after all five."""
    found = extraneous_claim(j)
    accuracy = qag_mean(j.qag)
    metrics: dict[str, dict[str, Any]] = {}
    if j.key_points and j.qag:
        rec, prec = recall(j), precision(j)
        f1 = harmonic_mean(prec, rec)
        caps = Caps()
        score = harmonic_mean(f1, accuracy) * 10
        score = caps.cap(score, JL_CAP, "extraneous_claim", found)
        not_all = sum(1 for a in j.qag if a.label == "Correct") < N_QUESTIONS
        score = caps.cap(score, QAG_CAP, "qag_not_all_correct", not_all)
        score = caps.cap(score, QAG_CAP, "qag_duplicate_spans", j.qag_duplicate_spans)
        low = prec < MIN_PRECISION or rec < MIN_RECALL
        score = caps.cap(score, QAG_CAP, "low_precision_or_recall", low)
        metrics["coverage"] = {
            "key_points": key_points_evidence(j),
            "recall": round(rec, 4),
            "precision": round(prec, 4),
            "extraneous_tokens": extraneous_evidence(j),
            "f1": round(f1, 4),
            "qag": qag_evidence(j.qag),
            "qag_accuracy": round(accuracy, 4),
            "caps": caps.applied,
            "overall_score": clamp_score(score),
        }
    else:
        metrics["coverage"] = error(j.missing.get("coverage", MISSING))
    metrics["alignment"] = alignment(j)
    if not j.claims:
        metrics["hallucination"] = error(j.missing.get("hallucination", MISSING))
    else:
        uf = unsupported_fraction(j)
        raw = max(0, 4 - round_int(uf * 4)) if found else 10 - round_int(uf * 14)
        answers = j.claim_qag or []
        claim_precision = qag_mean(answers) if answers else 1.0
        caps = Caps()
        score = caps.cap(
            raw * claim_precision, QAG_CAP, "qag_duplicate_spans", j.claim_qag_duplicate_spans
        )
        metrics["hallucination"] = {
            "claims": claims_evidence(j),
            "unsupported_fraction": round(uf, 4),
            "severity": band(uf, SEVERITY_BANDS, "minor"),
            "raw_score": raw,
            "qag": qag_evidence(answers),
            "qag_precision": round(claim_precision, 4),
            "caps": caps.applied,
            "overall_score": clamp_score(score),
        }
    if not j.segments:
        metrics["relevance"] = error(j.missing.get("relevance", MISSING))
    else:
        overlap = mean([JL_RELEVANCE_VALUES[s.label] for s in j.segments])
        caps = Caps()
        score = harmonic_mean(overlap, accuracy) * 10
        has_none = any(s.label == "None" for s in j.segments)
        score = caps.cap(score, JL_CAP, "none_segment_or_extraneous_claim", has_none or found)
        metrics["relevance"] = {
            "theme": j.theme,
            "segments": segments_evidence(j),
            "section_overlap": round(overlap, 4),
            "qag_accuracy": round(accuracy, 4),
            "caps": caps.applied,
            "overall_score": clamp_score(score),
        }
    metrics["bias_toxicity"] = bias_toxicity(j, judge_lock=True)
    safeguards(metrics, found, j.qag_duplicate_spans)
    return metrics


def evidence_spans(metrics: dict[str, dict[str, Any]]) -> set[str]:
    """Distinct summary spans cited as evidence: supported claims, summary sentences that
    answered a coverage question, High relevance segments (the perfect-10 guard rail)."""
    spans = {
        c["claim"] for c in metrics["hallucination"].get("claims", []) if c["label"] == "Supported"
    }
    spans |= {q["answered_from"] for q in metrics["coverage"].get("qag", []) if q["score"] > 0}
    spans |= {
        s["segment"] for s in metrics["relevance"].get("segments", []) if s["label"] == "High"
    }
    return spans


def safeguards(metrics: dict[str, dict[str, Any]], found: bool, duplicate_spans: bool) -> None:
    """Judge-Lock's cross-metric caps and global safeguards, in place."""
    if metrics["hallucination"].get("severity") == "severe":
        apply_cap(metrics["alignment"], JL_CAP, "hallucination_severe")
    if found:
        for name in ("coverage", "relevance"):
            apply_cap(metrics[name], JL_CAP, "hallucination_found")
    if duplicate_spans:
        for name in ("coverage", "relevance"):
            apply_cap(metrics[name], QAG_CAP, "qag_duplicate_spans")
    cov = metrics["coverage"]
    if "recall" in cov and (cov["precision"] < MIN_PRECISION or cov["recall"] < MIN_RECALL):
        apply_cap(metrics["relevance"], QAG_CAP, "low_precision_or_recall")
    scores = [m.get("overall_score") for m in metrics.values()]
    if all(s is not None and s >= PERFECT for s in scores):
        spans = evidence_spans(metrics)
        if len(spans) < MIN_EVIDENCE_SPANS:
            for m in metrics.values():
                apply_cap(m, GUARD_MAX, f"perfect_10_guard_rail: {len(spans)} evidence spans < 5")
