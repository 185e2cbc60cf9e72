"""Faithfulness of a summary to its article: the answers' faithfulness verdict, on summaries.

A summary is read as an answer with no query whose one context is its article
(:func:`as_answer`), and scored by the registry's ``faithfulness`` scorer unchanged: same
model, threshold, signals, evidence and config digest as an answer's verdict, keyed by the
summary id. Two things tell it from an answer's verdict on the shared topic:

- ``verdict_id`` = sha256(summary id, kind, ``summary``, config digest)[:32]
  (:func:`summary_verdict_id`): an answer and a summary that share an id keep two verdicts,
  where consumers that deduplicate on ``verdict_id`` (the ledger, the console) would otherwise
  keep one;
- ``evidence.scope`` = ``summary``.

Scored through :func:`~verdictflow.evaluators.answer_batch.score_answers`, as answers are: the
same text normalisation, and the same per-record budget (a summary past
``budget.answer_chars`` or an article past ``budget.context_chars`` DEFERs
``too_long_for_nlp``). Cost: it makes one ``analyze`` call per batch, so each distinct article is
indexed once, by the analyzer's context index (lexical by default: no neural pipeline) and
cache; only the summaries go through ``nlp.pipe``. The judges parse article and summary in
their own path (:mod:`~verdictflow.evaluators.summary_judges.verdicts`); nothing is shared with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from verdictflow.evaluators.answer_analysis import AnswerAnalyzer
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.answer_verdicts import ScoringContext, verdict_id
from verdictflow.evaluators.kinds import Scope, spec_for
from verdictflow.models.events import AnswerEvent, SummaryEvent
from verdictflow.models.verdicts import Verdict, VerdictKind


def as_answer(event: SummaryEvent) -> AnswerEvent:
    """The answer the faithfulness scorer reads: the summary, its article as the one context."""
    return AnswerEvent(
        id=event.id,
        query="",
        answer=event.summary,
        contexts=[event.article],
        model=event.model,
        tenant=event.tenant,
        ts=event.ts,
    )


def summary_verdict_id(summary_id: str, config_digest: str) -> str:
    """The id of a summary's faithfulness verdict (see the module docstring)."""
    return verdict_id(summary_id, VerdictKind.FAITHFULNESS, config_digest, Scope.SUMMARY.value)


def score_summaries(
    events: Sequence[SummaryEvent], analyzer: AnswerAnalyzer, ctx: ScoringContext
) -> list[Verdict]:
    """The faithfulness verdict of each summary, in order (DEFER for an empty summary or
    article, or a summary with nothing to check, as for answers)."""
    answers = [as_answer(e) for e in events]
    faithfulness = [spec_for(VerdictKind.FAITHFULNESS.value)]
    verdicts = []
    for answer, (verdict,) in zip(
        answers, score_answers(answers, ctx, analyzer, kinds=faithfulness), strict=True
    ):
        verdicts.append(
            verdict.model_copy(
                update={
                    "verdict_id": summary_verdict_id(answer.id, verdict.config_digest),
                    "evidence": {**verdict.evidence, "scope": Scope.SUMMARY.value},
                }
            )
        )
    return verdicts
