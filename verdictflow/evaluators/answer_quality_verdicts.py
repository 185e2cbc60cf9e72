"""Relevance, completeness and hallucination verdicts for one answer (spec 003).

Same contract as Q1/Q2 (``answer_verdicts``): deterministic ids, the config digest, typed
reasons, capped evidence, DEFER when the input cannot be scored. Hallucination is the one
lower-is-better score: it passes at or below its threshold.
"""

from __future__ import annotations

from typing import Any

from verdictflow.evaluators import completeness as completeness_mod
from verdictflow.evaluators import relevance as relevance_mod
from verdictflow.evaluators.answer_analysis import ParsedAnswer
from verdictflow.evaluators.answer_verdicts import (
    ScoringContext,
    VerdictMeta,
    build_verdict,
    capped,
)
from verdictflow.evaluators.policy import defer, gate, gate_at_most
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, Reason, ReasonCode, Verdict, VerdictKind


def score_relevance(event: AnswerEvent, ctx: ScoringContext) -> Verdict:
    """Relevance of the answer to the query; DEFER without a query or an answer."""
    tok = ctx.tokenizer
    threshold = ctx.policy.relevance.threshold
    answer_tokens = tok.tokens(event.answer)
    result = relevance_mod.relevance(
        event.query, event.answer, tok.tokens(event.query), answer_tokens, ctx.background
    )
    evidence: dict[str, Any] = {
        "cosine": result.cosine,
        "jaccard": result.jaccard,
        "shared_terms": capped(result.shared_terms, ctx.policy.evidence.max_tokens),
        "idf": ctx.background.digest if ctx.background is not None else None,
        "idf_source": ctx.background.source if ctx.background is not None else None,
    }
    if not event.query.strip():
        decision = defer(ReasonCode.NO_QUERY, "the event has no query to be relevant to")
    elif not answer_tokens:
        decision = defer(ReasonCode.EMPTY_ANSWER, "the answer has no tokens")
    else:
        decision = gate(result.score, threshold)
    score = result.score if decision[0] is not Decision.DEFER else None
    version = f"{relevance_mod.ANALYZER_VERSION}+jaccard:{tok.version}"
    return build_verdict(
        ctx, VerdictKind.RELEVANCE, event.id, score, threshold, decision, evidence,
        VerdictMeta.of(event), tokenizer_version=version,
    )  # fmt: skip


def score_completeness(event: AnswerEvent, ctx: ScoringContext) -> Verdict:
    """Share of query keywords the answer contains; 1.0 with a reason when there are none."""
    threshold = ctx.policy.completeness.threshold
    cap = ctx.policy.evidence.max_tokens
    result = completeness_mod.completeness(event.query, event.answer)
    evidence: dict[str, Any] = {
        "query_keyword_count": len(result.query_keywords),
        "found": capped(result.found, cap),
        "missing": capped(result.missing, cap),
    }
    extra: list[Reason] = []
    if not event.query.strip():
        decision = defer(ReasonCode.NO_QUERY, "the event has no query to be complete against")
    elif not event.answer.strip():
        decision = defer(ReasonCode.EMPTY_ANSWER, "the answer is empty")
    else:
        decision = gate(result.score, threshold)
        if result.no_keywords:
            extra.append(
                Reason(
                    code=ReasonCode.NO_QUERY_KEYWORDS,
                    detail="the query has no keyword after stop words; score 1.0 by the spec",
                )
            )
    score = result.score if decision[0] is not Decision.DEFER else None
    return build_verdict(
        ctx, VerdictKind.COMPLETENESS, event.id, score, threshold, decision, evidence,
        VerdictMeta.of(event), extra, tokenizer_version=completeness_mod.TOKENIZER_VERSION,
    )  # fmt: skip


def score_hallucination(event: AnswerEvent, parsed: ParsedAnswer, ctx: ScoringContext) -> Verdict:
    """max(claim error, drift penalty) over the answer's anchors; DEFER without anchors."""
    policy = ctx.policy.hallucination
    cap = ctx.policy.evidence.max_tokens
    result = parsed.anchor_checks(policy)
    checks = [c.evidence(parsed.contexts) for c in result.checks]
    evidence: dict[str, Any] = {
        "claim_error": result.claim_error,
        "drift_overlap": result.overlap,
        "drift_penalty": result.penalty,
        "anchor_count": len(checks),
        "unsupported_count": sum(c.support == "unsupported" for c in result.checks),
        "partial_count": sum(c.support == "partial" for c in result.checks),
        "anchors": capped(checks, cap),
        "hedged": [
            {"text": h.text[:200], "start": h.start, "end": h.end, "cue": h.cue}
            for h in capped(result.hedged, cap)
        ],
        "contexts": len(parsed.contexts),
    }
    extra: list[Reason] = []
    if result.hedged:
        extra.append(
            Reason(
                code=ReasonCode.HEDGED_CLAIMS_FILTERED,
                detail=f"{len(result.hedged)} hedged claim(s) not counted as anchors",
            )
        )
    if result.penalty > 0:
        extra.append(
            Reason(
                code=ReasonCode.TOPIC_DRIFT,
                detail=f"n-gram overlap {result.overlap:.4f} < {policy.drift_min_overlap:.4f}",
            )
        )
    if not event.answer.strip() or (not parsed.content_words and not parsed.anchors):
        decision = defer(ReasonCode.EMPTY_ANSWER, "the answer has no words to check")
    elif not parsed.contexts:
        decision = defer(ReasonCode.NO_CONTEXTS, "no context to check the answer against")
    elif result.score is None:
        decision = defer(
            ReasonCode.NO_ANCHORS, "no number, date, entity or assertive claim to verify"
        )
    else:
        decision = gate_at_most(result.score, policy.threshold)
    score = result.score if decision[0] is not Decision.DEFER else None
    return build_verdict(
        ctx, VerdictKind.HALLUCINATION, event.id, score, policy.threshold, decision, evidence,
        VerdictMeta.of(event), extra, tokenizer_version=ctx.nlp_version or "spacy",
    )  # fmt: skip
