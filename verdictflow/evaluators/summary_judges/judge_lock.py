"""Judge-Lock (spec 002, the stricter variant): its judgements by token rules, QAG included;
its arithmetic, caps and global safeguards are
:func:`~verdictflow.evaluators.summary_judges.rubric.judge_lock`.

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

from verdictflow.evaluators.summary_judges import common, qag, rubric
from verdictflow.evaluators.summary_judges.alignment import alignment_judgement
from verdictflow.evaluators.summary_judges.judgements import Judgements, KeyPoint, QagAnswer
from verdictflow.evaluators.summary_judges.keypoints import (
    KeyPoint as ArticlePoint,
)
from verdictflow.evaluators.summary_judges.keypoints import (
    extract_key_points,
    label_points,
)
from verdictflow.evaluators.summary_judges.text import Parsed
from verdictflow.evaluators.summary_judges.toxicity import bias_toxicity_judgement
from verdictflow.evaluators.summary_judges.twin_lock import missing_parts, shared_parts, theme

NAME = "judge_lock"
KEY_POINTS = (4, 7)
INTENT_TOKENS = 35
THEME_TOKENS = 20
NO_KEY_POINTS = "no_key_points: no article sentence has 6+ tokens"


def article_questions(article: Parsed, points: list[ArticlePoint]) -> list[qag.Question]:
    """Questions from key points first (most central facts), then the rest in article order."""
    first = [p.sentence for p in sorted(points, key=lambda p: (-p.rank_score, p.sentence))]
    rest = [i for i in range(len(article.sentences)) if i not in set(first)]
    return qag.generate(article, first + rest)


def answers(answered: list[qag.Answered]) -> list[QagAnswer]:
    return [
        QagAnswer(question=a.question.question, expected=a.question.answer,
                  label=a.label, answered_from=a.found_in)  # type: ignore[arg-type]
        for a in answered
    ]  # fmt: skip


def judgements(summary: Parsed, article: Parsed, shared: common.Shared) -> Judgements:
    """Judge-Lock's judgements by token rules: 6 QAGs from the article's key facts answered
    from the summary, and 6 from the summary's claims answered from the article."""
    points = extract_key_points(article, *KEY_POINTS)
    coverage_qag = qag.answer_all(article_questions(article, points), summary)
    claim_qag = (
        qag.answer_all(qag.generate(summary, [c.index for c in shared.claims]), article)
        if shared.claims
        else []
    )
    return Judgements(
        key_points=[KeyPoint.model_validate(p) for p in label_points(points, summary.keys)],
        **shared_parts(shared),
        theme=theme(article, points, THEME_TOKENS),
        alignment=alignment_judgement(summary, article, INTENT_TOKENS),
        bias_toxicity=bias_toxicity_judgement(summary),
        qag=answers(coverage_qag),
        claim_qag=answers(claim_qag),
        qag_duplicate_spans=qag.duplicate_spans(coverage_qag),
        claim_qag_duplicate_spans=qag.duplicate_spans(claim_qag),
        missing=missing_parts(shared, None if points and coverage_qag else NO_KEY_POINTS),
    )


def judge(summary: Parsed, article: Parsed) -> dict[str, dict[str, Any]]:
    """The five Judge-Lock metric objects (or the spec's error objects), keyed by metric."""
    reason = common.input_error(summary, article)
    if reason is not None:
        return {m: rubric.error(reason) for m in rubric.METRICS}
    return rubric.judge_lock(judgements(summary, article, common.analyse(summary, article)))
