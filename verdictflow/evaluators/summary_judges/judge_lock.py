"""Judge-Lock: the stricter variant (spec 002), with QAG and global safeguards.

Strict order: coverage, alignment, hallucination, relevance, bias-toxicity; caps that depend
on later metrics (hallucination severity, extraneous claims) and the global safeguards are
applied after all five, each recorded in the capped metric's ``caps``.

Readings of the spec where it is literally impossible or silent (see docs/verdicts/judge.md):
- "<=6 correct QAGs -> <=7" with exactly 6 questions would cap every summary; we read it as
  "fewer than all 6 correct".
- "Precision/Recall issues -> <=7" applies to the two content metrics that use them
  (coverage, and relevance through coverage's QAG), not to tone or toxicity.
- Severity bands use the global "lower band if exactly on edge" rule: 0.5 is *moderate*.
- The perfect-10 guard rail counts distinct summary spans cited as evidence: supported claims,
  summary sentences that answered a coverage question, and High relevance segments.
"""

from __future__ import annotations

from typing import Any

from verdictflow.evaluators.summary_judges import common, qag
from verdictflow.evaluators.summary_judges.alignment import alignment
from verdictflow.evaluators.summary_judges.keypoints import (
    KeyPoint,
    extract_key_points,
    label_points,
    recall,
)
from verdictflow.evaluators.summary_judges.rules import (
    Caps,
    band,
    clamp_score,
    harmonic_mean,
    mean,
    round_int,
)
from verdictflow.evaluators.summary_judges.text import Parsed
from verdictflow.evaluators.summary_judges.toxicity import bias_toxicity
from verdictflow.evaluators.summary_judges.twin_lock import apply_cap, theme

NAME = "judge_lock"
KEY_POINTS = (4, 7)
INTENT_TOKENS = 35
THEME_TOKENS = 20
CAP = 3.0
QAG_CAP = 7.0
MIN_PRECISION = 0.95
MIN_RECALL = 0.90
SEVERITY_BANDS = ((0.5, "severe"), (0.25, "moderate"))
RELEVANCE_VALUES = {"High": 1.0, "Some": 0.3, "None": 0.0}
PERFECT = 9.5
MIN_EVIDENCE_SPANS = 5
GUARD_MAX = 9.0


def qag_evidence(answers: list[qag.Answered]) -> list[dict[str, Any]]:
    return [
        {
            "question": a.question.question,
            "expected": a.question.answer,
            "label": a.label,
            "score": a.score,
            "answered_from": a.found_in,
        }
        for a in answers
    ]


def article_questions(article: Parsed, points: list[KeyPoint]) -> list[qag.Question]:
    """Questions from key points first (most central facts), then the rest in article order."""
    first = [p.sentence for p in sorted(points, key=lambda p: (-p.rank_score, p.sentence))]
    rest = [i for i in range(len(article.sentences)) if i not in set(first)]
    return qag.generate(article, first + rest)


def coverage(
    summary: Parsed, shared: common.Shared, points: list[KeyPoint], answers: list[qag.Answered]
) -> dict[str, Any]:
    labelled = label_points(points, summary.keys)
    rec, prec = recall(labelled), shared.precision
    f1 = harmonic_mean(prec, rec)
    accuracy = mean([a.score for a in answers])
    caps = Caps()
    score = harmonic_mean(f1, accuracy) * 10
    score = caps.cap(score, CAP, "extraneous_claim", shared.extraneous_claim)
    not_all = sum(1 for a in answers if a.label == "Correct") < qag.N_QUESTIONS
    score = caps.cap(score, QAG_CAP, "qag_not_all_correct", not_all)
    score = caps.cap(score, QAG_CAP, "qag_duplicate_spans", qag.duplicate_spans(answers))
    low = prec < MIN_PRECISION or rec < MIN_RECALL
    score = caps.cap(score, QAG_CAP, "low_precision_or_recall", low)
    return {
        "key_points": labelled,
        "recall": round(rec, 4),
        "precision": round(prec, 4),
        "extraneous_tokens": common.extraneous_evidence(shared),
        "f1": round(f1, 4),
        "qag": qag_evidence(answers),
        "qag_accuracy": round(accuracy, 4),
        "caps": caps.applied,
        "overall_score": clamp_score(score),
    }


def hallucination(summary: Parsed, article: Parsed, shared: common.Shared) -> dict[str, Any]:
    if not shared.claims:
        return common.error("no_claims: no summary sentence has 2 or more content words")
    uf = shared.unsupported_fraction
    if any(c.label == "Unsupported" for c in shared.claims):
        raw = max(0, 4 - round_int(uf * 4))
    else:
        raw = 10 - round_int(uf * 14)
    answers = qag.answer_all(qag.generate(summary, [c.index for c in shared.claims]), article)
    precision = mean([a.score for a in answers]) if answers else 1.0
    caps = Caps()
    score = caps.cap(raw * precision, QAG_CAP, "qag_duplicate_spans", qag.duplicate_spans(answers))
    return {
        "claims": common.claims_evidence(shared),
        "unsupported_fraction": round(uf, 4),
        "severity": band(uf, SEVERITY_BANDS, "minor"),
        "raw_score": raw,
        "qag": qag_evidence(answers),
        "qag_precision": round(precision, 4),
        "caps": caps.applied,
        "overall_score": clamp_score(score),
    }


def relevance(
    article: Parsed, shared: common.Shared, points: list[KeyPoint], accuracy: float
) -> dict[str, Any]:
    if not shared.segments:
        return common.error("no_segments: no summary segment has 6 or more tokens")
    overlap = mean([RELEVANCE_VALUES[s.label] for s in shared.segments])
    caps = Caps()
    score = harmonic_mean(overlap, accuracy) * 10
    has_none = any(s.label == "None" for s in shared.segments)
    score = caps.cap(
        score, CAP, "none_segment_or_extraneous_claim", has_none or shared.extraneous_claim
    )
    return {
        "theme": theme(article, points, THEME_TOKENS),
        "segments": common.segments_evidence(shared),
        "section_overlap": round(overlap, 4),
        "qag_accuracy": round(accuracy, 4),
        "caps": caps.applied,
        "overall_score": clamp_score(score),
    }


def evidence_spans(metrics: dict[str, dict[str, Any]]) -> set[str]:
    spans = {
        c["claim"] for c in metrics["hallucination"].get("claims", []) if c["label"] == "Supported"
    }
    spans |= {q["answered_from"] for q in metrics["coverage"].get("qag", []) if q["score"] > 0}
    spans |= {
        s["segment"] for s in metrics["relevance"].get("segments", []) if s["label"] == "High"
    }
    return spans


def judge(summary: Parsed, article: Parsed) -> dict[str, dict[str, Any]]:
    """The five Judge-Lock metric objects (or the spec's error objects), keyed by metric."""
    reason = common.input_error(summary, article)
    if reason is not None:
        return {m: common.error(reason) for m in common.METRICS}
    shared = common.analyse(summary, article)
    points = extract_key_points(article, *KEY_POINTS)
    answers = qag.answer_all(article_questions(article, points), summary)
    metrics: dict[str, dict[str, Any]] = {}
    if points and answers:
        metrics["coverage"] = coverage(summary, shared, points, answers)
    else:
        metrics["coverage"] = common.error("no_key_points: no article sentence has 6+ tokens")
    metrics["alignment"] = {**alignment(summary, article, INTENT_TOKENS), "caps": []}
    metrics["hallucination"] = hallucination(summary, article, shared)
    accuracy = mean([a.score for a in answers])
    metrics["relevance"] = relevance(article, shared, points, accuracy)
    metrics["bias_toxicity"] = bias_toxicity(summary, judge_lock=True)
    safeguards(metrics, shared, answers)
    return metrics


def safeguards(
    metrics: dict[str, dict[str, Any]], shared: common.Shared, answers: list[qag.Answered]
) -> None:
    """Cross-metric caps and the global safeguards, in place."""
    if metrics["hallucination"].get("severity") == "severe":
        apply_cap(metrics["alignment"], CAP, "hallucination_severe")
    if shared.extraneous_claim:
        for name in ("coverage", "relevance"):
            apply_cap(metrics[name], CAP, "hallucination_found")
    if qag.duplicate_spans(answers):
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
