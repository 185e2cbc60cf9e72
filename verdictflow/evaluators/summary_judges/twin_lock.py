"""Twin-Lock (spec 002, first variant): its judgements by token rules; its arithmetic is
:func:`~verdictflow.evaluators.summary_judges.rubric.twin_lock`.

The judgements: 3-7 extractive key points and how far the summary covers each, the summary's
extraneous tokens and labelled claims, the relevance segments, the article's theme (<= 25
tokens), the intent and drift (<= 40 tokens), the tone and bias-toxicity findings.
"""

from __future__ import annotations

from typing import Any

from verdictflow.evaluators.summary_judges import common, rubric
from verdictflow.evaluators.summary_judges.alignment import alignment_judgement
from verdictflow.evaluators.summary_judges.judgements import (
    Claim,
    Judgements,
    KeyPoint,
    Segment,
)
from verdictflow.evaluators.summary_judges.keypoints import extract_key_points, label_points
from verdictflow.evaluators.summary_judges.text import Parsed
from verdictflow.evaluators.summary_judges.toxicity import bias_toxicity_judgement

NAME = "twin_lock"
KEY_POINTS = (3, 7)
INTENT_TOKENS = 40
THEME_TOKENS = 25
NO_KEY_POINTS = "no_key_points: no article sentence has 6 or more tokens"
NO_CLAIMS = "no_claims: no summary sentence has 2 or more content words"
NO_SEGMENTS = "no_segments: no summary segment has 6 or more tokens"


def theme(article: Parsed, points: list[Any], limit: int) -> str:
    """The most central key point, cut to ``limit`` tokens: the article's focus in a line."""
    if not points:
        return ""
    best = max(points, key=lambda p: (p.rank_score, -p.sentence))
    return " ".join(best.text.split()[:limit])


def shared_parts(shared: common.Shared) -> dict[str, Any]:
    """The judgements both frameworks share, from the shared token-rule analysis."""
    return {
        "extraneous_tokens": [t.text for t in shared.extraneous],
        "summary_tokens": shared.summary_content,
        "claims": [
            Claim(
                claim=c.text,
                label=c.label,
                support=c.support,  # type: ignore[arg-type]
                missing_anchors=list(c.missing_anchors),
            )
            for c in shared.claims
        ],
        "segments": [
            Segment(segment=s.text, overlap=s.overlap, label=s.label)  # type: ignore[arg-type]
            for s in shared.segments
        ],
    }


def missing_parts(shared: common.Shared, coverage: str | None) -> dict[str, str]:
    """The spec's error reasons for the metrics whose judgements came out empty."""
    missing = {} if coverage is None else {"coverage": coverage}
    if not shared.claims:
        missing["hallucination"] = NO_CLAIMS
    if not shared.segments:
        missing["relevance"] = NO_SEGMENTS
    return missing


def judgements(summary: Parsed, article: Parsed, shared: common.Shared) -> Judgements:
    """Twin-Lock's judgements by token rules."""
    points = extract_key_points(article, *KEY_POINTS)
    labelled = [KeyPoint.model_validate(p) for p in label_points(points, summary.keys)]
    return Judgements(
        key_points=labelled,
        **shared_parts(shared),
        theme=theme(article, points, THEME_TOKENS),
        alignment=alignment_judgement(summary, article, INTENT_TOKENS),
        bias_toxicity=bias_toxicity_judgement(summary),
        missing=missing_parts(shared, None if points else NO_KEY_POINTS),
    )


def judge(summary: Parsed, article: Parsed) -> dict[str, dict[str, Any]]:
    """The five Twin-Lock metric objects (or the spec's error objects), keyed by metric."""
    reason = common.input_error(summary, article)
    if reason is not None:
        return {m: rubric.error(reason) for m in rubric.METRICS}
    return rubric.twin_lock(judgements(summary, article, common.analyse(summary, article)))
