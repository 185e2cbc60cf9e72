"""The per-record budget of the NLP tier: which answers are too long to parse, and the DEFER
verdicts they get instead.

Parsing is the NLP tier's cost, and it grows with the answer's length (spaCy) and the
contexts' (the index, and the alignment of every answer sentence against every context
sentence). A record over the policy's ``budget`` is not parsed at all, so the records behind
it in its batch wait at most what a record at the limits costs. Its hallucination and
faithfulness verdicts DEFER with ``too_long_for_nlp``, the sizes and the limits: a DEFER, not
a score over a prefix, because a gate must not PASS an answer whose unread part may hold the
made-up fact.
"""

from __future__ import annotations

from dataclasses import dataclass

from verdictflow.evaluators.answer_verdicts import ScoringContext, VerdictMeta, build_verdict
from verdictflow.evaluators.policy import BudgetPolicy, defer
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import ReasonCode, Verdict, VerdictKind


@dataclass(frozen=True, slots=True)
class OverBudget:
    """Why an answer is not parsed: its sizes against the limits."""

    answer_chars: int
    context_chars: int
    budget: BudgetPolicy

    @property
    def detail(self) -> str:
        parts = []
        if self.answer_chars > self.budget.answer_chars:
            parts.append(
                f"answer of {self.answer_chars:,} characters > budget.answer_chars "
                f"{self.budget.answer_chars:,}"
            )
        if self.context_chars > self.budget.context_chars:
            parts.append(
                f"contexts of {self.context_chars:,} characters > budget.context_chars "
                f"{self.budget.context_chars:,}"
            )
        return "too long for the NLP tier: " + "; ".join(parts)

    def evidence(self) -> dict[str, int]:
        return {
            "answer_chars": self.answer_chars,
            "context_chars": self.context_chars,
            "budget_answer_chars": self.budget.answer_chars,
            "budget_context_chars": self.budget.context_chars,
        }


def over_budget(event: AnswerEvent, budget: BudgetPolicy) -> OverBudget | None:
    """The answer's sizes when one is over its limit, else None."""
    answer = len(event.answer)
    contexts = sum(len(c.text) for c in event.context_passages if c.text.strip())
    if answer <= budget.answer_chars and contexts <= budget.context_chars:
        return None
    return OverBudget(answer, contexts, budget)


def deferred_verdict(
    kind: VerdictKind, threshold: float, event: AnswerEvent, why: OverBudget, ctx: ScoringContext
) -> Verdict:
    """The DEFER verdict of an NLP kind for an answer over the budget."""
    return build_verdict(
        ctx, kind, event.id, None, threshold, defer(ReasonCode.TOO_LONG_FOR_NLP, why.detail),
        why.evidence(), VerdictMeta.of(event), tokenizer_version=ctx.nlp_version or "spacy",
    )  # fmt: skip
