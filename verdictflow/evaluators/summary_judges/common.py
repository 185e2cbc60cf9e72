"""What both judges compute the same way: input checks, extraneous tokens, claims, segments.

Computed once per (summary, article) and shared, so Twin-Lock and Judge-Lock on one event see
the same claims and segments (they differ in their formulas and caps, not in the evidence).
"""

from __future__ import annotations

from dataclasses import dataclass

from verdictflow.evaluators.summary_judges.claims import Claim, extraneous_tokens, label_claims
from verdictflow.evaluators.summary_judges.segments import Segment, score_segments
from verdictflow.evaluators.summary_judges.text import Parsed, Tok

MAX_EVIDENCE_ITEMS = 32


@dataclass(frozen=True)
class Shared:
    extraneous: list[Tok]
    summary_content: int
    claims: list[Claim]
    segments: list[Segment]


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
        segments=score_segments(summary, article),
    )
