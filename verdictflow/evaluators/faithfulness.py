"""Faithfulness: the learned probability that an answer is fully supported by its contexts.

The gate a user should trust for "did it make something up". Spec 003's hallucination score
stays as specified; this verdict reads the same parse and anchors, computes the signals of
:mod:`~verdictflow.evaluators.faithfulness_signals` and weighs them with the policy's model
(:mod:`~verdictflow.evaluators.faithfulness_model`). PASS at or above the threshold.

The evidence says why: each factor's probability, each signal's value and contribution (in
logit units of its factor, negative = against the answer), the signals that pulled the score
down most, and the spans behind them (the fabricated name, the misplaced number, the negated
sentence). A FAIL carries a reason naming the weaker factor and its strongest signal with its
span, so an operator reads the cause without opening the evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from verdictflow.evaluators.answer_verdicts import (
    ScoringContext,
    VerdictMeta,
    build_verdict,
    capped,
)
from verdictflow.evaluators.faithfulness_signals import Finding, Signals, compute_signals
from verdictflow.evaluators.groundedness import groundedness
from verdictflow.evaluators.policy import defer, gate
from verdictflow.evaluators.relations import confirmed_comparisons
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, Reason, ReasonCode, Verdict, VerdictKind

if TYPE_CHECKING:
    from verdictflow.evaluators.answer_analysis import ParsedAnswer
    from verdictflow.evaluators.faithfulness_model import Prediction

#: How many of the most negative contributions the evidence names as drivers.
DRIVERS = 3


def faithfulness_signals(event: AnswerEvent, parsed: ParsedAnswer, ctx: ScoringContext) -> Signals:
    """The signals of one answer: its parse and anchors against its contexts, and Q1."""
    tok = ctx.tokenizer
    contexts = [tok.tokens(c.text) for c in event.context_passages]
    q1 = groundedness(tok.tokens(event.answer), contexts).score
    result = parsed.anchor_checks(ctx.policy.hallucination)
    return compute_signals(
        parsed.sentences, event.answer, result, parsed.contexts, q1 or 0.0,
        claim_groundedness(event, parsed, ctx, contexts), parsed.relations,
        parsed.coverages or None,
    )  # fmt: skip


def claim_groundedness(
    event: AnswerEvent, parsed: ParsedAnswer, ctx: ScoringContext, contexts: list[frozenset[str]]
) -> float:
    """Q1 of the answer's claims: the score's ceiling. Not its questions back and pleasantries,
    nor a sentence whose comparison the supporting sentence's values bear out ("Jupiter is more
    massive than Saturn" against 318 and 95 Earth masses: an inference, in words the context
    need not use); 1.0 when that leaves no claim (nothing uncovered)."""
    confirmed = [
        comp.start
        for item in parsed.relations
        for comp in confirmed_comparisons(item.answer, item.support)
    ]
    claims = " ".join(
        event.answer[s.start : s.end]
        for s in parsed.sentences
        if s.claim and not any(s.start <= at < s.end for at in confirmed)
    )
    q1 = groundedness(ctx.tokenizer.tokens(claims), contexts).score
    return 1.0 if q1 is None else q1


def _driver_reason(prediction: Prediction, ctx: ScoringContext, signals: Signals) -> Reason:
    """The weaker factor, its most negative signal, and that signal's first span; or the
    ceiling, when it is what brought the score under the threshold."""
    capped_from = prediction.capped_from
    if capped_from is not None and capped_from >= ctx.policy.faithfulness.threshold:
        return Reason(
            code=ReasonCode.WEAK_SUPPORT,
            detail=f"capped at {ctx.faithfulness.ceiling} {prediction.score:.4f} (the factors "
            f"gave {capped_from:.4f}): too little of the answer is in its contexts",
        )
    factor = min(ctx.faithfulness.factors, key=lambda f: prediction.factors[f.name])
    signal = min(factor.signals, key=lambda name: prediction.contributions[name])
    detail = (
        f"{factor.name} factor {prediction.factors[factor.name]:.4f}; strongest signal "
        f"{signal} = {signals.values[signal]:.4f} ({prediction.contributions[signal]:+.3f})"
    )
    # The span: the strongest signal's own first finding, else the next signal's of the factor.
    ranked = sorted(factor.signals, key=lambda name: prediction.contributions[name])
    span = next((f for name in ranked for f in signals.findings if f.signal == name), None)
    if span is not None:
        detail += f": {span.text[:80]!r} at {span.start}-{span.end}"
    code = ReasonCode.UNSUPPORTED_DETAIL if factor.name == "detail" else ReasonCode.WEAK_SUPPORT
    return Reason(code=code, detail=detail)


def _evidence(
    prediction: Prediction, signals: Signals, parsed: ParsedAnswer, ctx: ScoringContext
) -> dict[str, Any]:
    model = ctx.faithfulness
    cap = ctx.policy.evidence.max_tokens
    rows: list[dict[str, Any]] = [
        {
            "name": name,
            "factor": factor.name,
            "value": signals.values[name],
            "contribution": prediction.contributions[name],
        }
        for factor in model.factors
        for name in factor.signals
    ]
    ranked = sorted(model.signals, key=lambda name: (prediction.contributions[name], name))
    drivers = [name for name in ranked[:DRIVERS] if prediction.contributions[name] < 0]
    findings: list[Finding] = list(signals.findings)
    ceiling = None
    if model.ceiling is not None:
        ceiling = {
            "signal": model.ceiling,
            "value": signals.values[model.ceiling],
            "capped_from": prediction.capped_from,
        }
    return {
        "factors": prediction.factors,
        "ceiling": ceiling,
        "signals": rows,
        "drivers": drivers,
        "finding_count": len(findings),
        "findings": [f.evidence(parsed.contexts) for f in capped(findings, cap)],
        "model_digest": model.digest,
        "contexts": len(parsed.contexts),
    }


def defer_decision(event: AnswerEvent, parsed: ParsedAnswer) -> tuple[Decision, Reason] | None:
    """DEFER when there is nothing to check: no answer, no context, no content word."""
    if not event.answer.strip():
        return defer(ReasonCode.EMPTY_ANSWER, "the answer is empty")
    if not parsed.contexts:
        return defer(ReasonCode.NO_CONTEXTS, "no context to check the answer against")
    if not parsed.anchors or not any(s.tokens for s in parsed.sentences):
        # The hallucination check's rule: nothing it could find unsupported ("Yes.", "No.").
        return defer(ReasonCode.NO_ANCHORS, "no number, date, entity, claim or term to check")
    if not any(s.claim for s in parsed.sentences):
        return defer(
            ReasonCode.NO_ANCHORS,
            "no claim to check: only questions back to the user and pleasantries",
        )
    return None


def score_faithfulness(event: AnswerEvent, parsed: ParsedAnswer, ctx: ScoringContext) -> Verdict:
    """The faithfulness verdict of one answer; DEFER when there is nothing to check."""
    threshold = ctx.policy.faithfulness.threshold
    signals = faithfulness_signals(event, parsed, ctx)
    prediction = ctx.faithfulness.predict(signals.values)
    evidence = _evidence(prediction, signals, parsed, ctx)
    extra: list[Reason] = []
    decision = defer_decision(event, parsed)
    if decision is None:
        decision = gate(prediction.score, threshold)
        if decision[0] is Decision.FAIL:
            extra.append(_driver_reason(prediction, ctx, signals))
    score = prediction.score if decision[0] is not Decision.DEFER else None
    return build_verdict(
        ctx, VerdictKind.FAITHFULNESS, event.id, score, threshold, decision, evidence,
        VerdictMeta.of(event), extra, tokenizer_version=ctx.nlp_version or "spacy",
    )  # fmt: skip
