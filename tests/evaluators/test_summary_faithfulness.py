"""Faithfulness on summaries, with the real spaCy pipeline: a summary is scored as an answer
whose one context is its article, by the registry's faithfulness scorer."""

from __future__ import annotations

import pytest

from tests.support.summary_texts import ARTICLE, FABRICATED, FAITHFUL
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy
from verdictflow.evaluators.summary_faithfulness import (
    as_answer,
    score_summaries,
    summary_verdict_id,
)
from verdictflow.models.events import SummaryEvent
from verdictflow.models.verdicts import Decision, ReasonCode, VerdictKind
from verdictflow.scoring_setup import Scoring, load_scoring, new_analyzer


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return load_scoring(Policy())


def event(sid: str, summary: str, article: str = ARTICLE) -> SummaryEvent:
    return SummaryEvent(
        id=sid, article=article, summary=summary, model="m1", tenant="t1", ts=1700000000.5
    )


def test_a_summary_is_an_answer_to_no_query_with_its_article_as_the_one_context() -> None:
    e = event("s1", FAITHFUL).model_copy(update={"judges": ["twin_lock"]})
    answer = as_answer(e)
    assert (answer.id, answer.query, answer.answer) == ("s1", "", FAITHFUL)
    assert [c.text for c in answer.context_passages] == [ARTICLE]
    assert (answer.model, answer.tenant, answer.group, answer.ts) == ("m1", "t1", None, e.ts)
    assert (answer.variants, answer.request_id) == ([], None)


def test_a_fabricated_name_fails_and_its_evidence_names_it(scoring: Scoring) -> None:
    fabricated, faithful = score_summaries(
        [event("fab", FABRICATED), event("ok", FAITHFUL)], scoring.analyzer, scoring.ctx
    )
    assert (fabricated.kind, fabricated.input_id) == (VerdictKind.FAITHFULNESS, "fab")
    assert fabricated.decision is Decision.FAIL
    assert any("Lyon" in r.detail for r in fabricated.reasons[1:])
    spans = [f["text"] for f in fabricated.evidence["findings"]]
    assert any("Lyon" in text for text in spans), spans
    lyon = next(f for f in fabricated.evidence["findings"] if f["text"] == "Lyon")
    assert FABRICATED[lyon["start"] : lyon["end"]] == "Lyon"  # offsets into the summary
    assert faithful.decision is Decision.PASS, faithful.reasons
    assert faithful.evidence["findings"] == []
    assert (faithful.model, faithful.tenant, faithful.event_ts) == ("m1", "t1", 1700000000.5)


def test_the_verdict_is_the_answers_one_but_for_its_id_and_scope(scoring: Scoring) -> None:
    """Same scorer, score, evidence and digest as the summary scored as an answer; its own id,
    so an answer and a summary sharing an id keep two verdicts on the topic."""
    e = event("same-id", FABRICATED)
    (summary,) = score_summaries([e], scoring.analyzer, scoring.ctx)
    (as_answers,) = score_answers([as_answer(e)], scoring.ctx, scoring.analyzer, Tier.NLP)
    answer = next(v for v in as_answers if v.kind is VerdictKind.FAITHFULNESS)
    assert summary.verdict_id == summary_verdict_id("same-id", scoring.ctx.config_digest)
    assert summary.verdict_id != answer.verdict_id
    assert summary.evidence == {**answer.evidence, "scope": "summary"}
    exclude = {"verdict_id", "evidence"}
    assert summary.model_dump(exclude=exclude) == answer.model_dump(exclude=exclude)


def test_byte_identical_whatever_the_cache_and_the_batch(scoring: Scoring) -> None:
    events = [event("fab", FABRICATED), event("ok", FAITHFUL)]
    warm = score_summaries(events, scoring.analyzer, scoring.ctx)
    cold = score_summaries(events[::-1], new_analyzer(Policy()), scoring.ctx)[::-1]
    assert [v.model_dump_json() for v in warm] == [v.model_dump_json() for v in cold]


def test_nothing_to_check_defers(scoring: Scoring) -> None:
    no_article, no_summary = score_summaries(
        [event("a", FAITHFUL, article=" "), event("b", "")], scoring.analyzer, scoring.ctx
    )
    assert no_article.decision is Decision.DEFER
    assert no_article.reasons[0].code is ReasonCode.NO_CONTEXTS
    assert no_summary.decision is Decision.DEFER
    assert no_summary.reasons[0].code is ReasonCode.EMPTY_ANSWER
