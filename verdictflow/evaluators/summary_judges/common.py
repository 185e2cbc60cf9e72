"""What both judges compute the same way: input checks, extraneous tokens, claims, segments.

Computed once per (summary, article) and shared, so Twin-Lock and Judge-Lock on one event see
the same claims and segments (they differ in their formulas and caps, not in the evidence).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verdictflow.evaluators.summary_judges.claims import (
    Claim,
    extraneous_tokens,
    label_claims,
    unsupported_fraction,
)
from verdictflow.evaluators.summary_judges.segments import Segment, score_segments
from verdictflow.evaluators.summary_judges.text import Parsed, Tok

METRICS = ("coverage", "alignment", "hallucination", "relevance", "bias_toxicity")
MAX_EVIDENCE_ITEMS = 32


@dataclass(frozen=True)
class Shared:
    extraneous: list[Tok]
    summary_content: int
    claims: list[Claim]
    unsupported_fraction: float
    segments: list[Segment]

    @property
    def precision(self) -> float:
        """1 - extraneous / summary content tokens (spec: coverage precision)."""
        if self.summary_content == 0:
            return 0.0
        return 1.0 - len(self.extraneous) / self.summary_content

    @property
    def extraneous_claim(self) -> bool:
        """A claim the article does not support: the spec's "extraneous claim", and what both
        judges call "hallucination found" for their caps (a *Partially* claim is ambiguous,
        not found)."""
        return any(c.label == "Unsupported" for c in self.claims)


def input_error(summary: Parsed, article: Parsed) -> str | None:
    """The spec's hard fail: a reason when the pair cannot be judged at all."""
    if not article.content():
        return "empty_article: the article has no content words"
    if not summary.content():
        return "empty_summary: the summary has no content words"
    return None


def analyse(summary: Parsed, article: Parsed) -> Shared:
    extraneous, total = extraneous_tokens(summary, article)
    claims = label_claims(summary, article)
    return Shared(
        extraneous=extraneous,
        summary_content=total,
        claims=claims,
        unsupported_fraction=unsupported_fraction(claims),
        segments=score_segments(summary, article),
    )


def claims_evidence(shared: Shared) -> list[dict[str, Any]]:
    return [
        {
            "claim": c.text,
            "label": c.label,
            "support": c.support,
            "missing_anchors": list(c.missing_anchors),
        }
        for c in shared.claims
    ]


def extraneous_evidence(shared: Shared) -> list[str]:
    return list(dict.fromkeys(t.text for t in shared.extraneous))[:MAX_EVIDENCE_ITEMS]


def segments_evidence(shared: Shared) -> list[dict[str, Any]]:
    return [{"segment": s.text, "overlap": s.overlap, "label": s.label} for s in shared.segments]


def error(reason: str) -> dict[str, Any]:
    """The spec's error object."""
    return {"error": reason}
