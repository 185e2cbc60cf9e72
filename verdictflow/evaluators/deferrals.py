"""Answers that are not scored at all, and the DEFER verdicts they get instead.

Two checks, made before any scorer runs (in
:func:`~verdictflow.evaluators.answer_batch.score_answers`):

- **the per-record budget of the NLP tier** (:func:`over_budget`): parsing is the NLP tier's
  cost, and it grows with the answer's length (spaCy) and the contexts' (the index, and the
  alignment of every answer sentence against every context sentence). A record over the
  policy's ``budget`` is not parsed, so the records behind it in its batch wait at most what a
  record at the limits costs. Its hallucination and faithfulness verdicts DEFER with
  ``too_long_for_nlp``, the sizes and the limits: a DEFER, not a score over a prefix, because a
  gate must not PASS an answer whose unread part may hold the made-up fact. The lexical kinds,
  linear in the text, still score it.
- **the script** (:func:`unsupported_language`): an answer, or contexts, written mostly
  outside the Latin script (:mod:`~verdictflow.evaluators.language`) DEFER with
  ``unsupported_language`` from every kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verdictflow.evaluators import completeness
from verdictflow.evaluators.answer_verdicts import ScoringContext, VerdictMeta, build_verdict
from verdictflow.evaluators.language import latin_share, unsupported_script
from verdictflow.evaluators.policy import BudgetPolicy, defer
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import ReasonCode, Verdict, VerdictKind


@dataclass(frozen=True, slots=True)
class Deferral:
    """Why an answer is not scored: the reason, its detail and evidence, and whether only the
    kinds that parse (spaCy) defer."""

    code: ReasonCode
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)
    parsing_kinds_only: bool = False


def over_budget(event: AnswerEvent, budget: BudgetPolicy) -> Deferral | None:
    """A deferral of the NLP kinds when the answer or its contexts exceed ``budget``."""
    answer = len(event.answer)
    contexts = sum(len(c.text) for c in event.context_passages if c.text.strip())
    if answer <= budget.answer_chars and contexts <= budget.context_chars:
        return None
    parts = []
    if answer > budget.answer_chars:
        parts.append(
            f"answer of {answer:,} characters > budget.answer_chars {budget.answer_chars:,}"
        )
    if contexts > budget.context_chars:
        parts.append(
            f"contexts of {contexts:,} characters > budget.context_chars {budget.context_chars:,}"
        )
    evidence = {
        "answer_chars": answer,
        "context_chars": contexts,
        "budget_answer_chars": budget.answer_chars,
        "budget_context_chars": budget.context_chars,
    }
    detail = "too long for the NLP tier: " + "; ".join(parts)
    return Deferral(ReasonCode.TOO_LONG_FOR_NLP, detail, evidence, parsing_kinds_only=True)


def unsupported_language(event: AnswerEvent) -> Deferral | None:
    """A deferral of every kind when the answer, or every non-blank context, is written
    mostly outside the Latin script."""
    contexts = [c.text for c in event.context_passages if c.text.strip()]
    if unsupported_script(event.answer):
        where = "the answer"
    elif contexts and all(unsupported_script(c) for c in contexts):
        where = "every context"
    else:
        return None
    share = latin_share(event.answer)
    evidence = {"answer_latin_share": None if share is None else round(share, 4)}
    detail = f"{where} is written mostly outside the Latin script; the pipelines read English"
    return Deferral(ReasonCode.UNSUPPORTED_LANGUAGE, detail, evidence)


def deferred_verdict(
    kind: VerdictKind,
    threshold: float,
    parses: bool,
    event: AnswerEvent,
    why: Deferral,
    ctx: ScoringContext,
) -> Verdict:
    """The DEFER verdict of ``kind`` for an answer not scored (``parses``: the kind reads
    spaCy's parse, whose version it records as its tokenizer)."""
    if parses:
        tokenizer = ctx.nlp_version or "spacy"
    elif kind is VerdictKind.COMPLETENESS:
        tokenizer = completeness.TOKENIZER_VERSION
    else:
        tokenizer = ctx.tokenizer.version
    return build_verdict(
        ctx, kind, event.id, None, threshold, defer(why.code, why.detail), dict(why.evidence),
        VerdictMeta.of(event), tokenizer_version=tokenizer,
    )  # fmt: skip
