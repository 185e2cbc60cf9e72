"""The NLP tier's per-record budget, and scores that invisible characters do not move."""

from __future__ import annotations

import time

import pytest

from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import BudgetPolicy, Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, ReasonCode
from verdictflow.scoring_setup import Scoring, load_scoring

CLEAN = "The cat sat on the mat."
DIRTY = {
    "zero-width space": "The c\u200bat sat on the m\u200bat.",
    "NUL": "The c\x00at sat on the m\x00at.",
    "ANSI": "The \x1b[1mc\x1b[0mat sat on the m\x1b[31mat\x1b[0m.",
}


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return load_scoring(Policy(budget=BudgetPolicy(answer_chars=2_000, context_chars=5_000)))


def verdicts(scoring: Scoring, answer: str, contexts: list[str]) -> dict[str, tuple[object, ...]]:
    event = AnswerEvent(id="a", query="Where did the cat sit?", answer=answer, contexts=contexts)
    (found,) = score_answers([event], scoring.ctx, scoring.analyzer)
    return {v.kind.value: (v.score, v.decision, v.reasons[0].code) for v in found}


@pytest.mark.parametrize("name", DIRTY)
def test_invisible_characters_inside_words_move_no_score(scoring: Scoring, name: str) -> None:
    assert verdicts(scoring, DIRTY[name], [CLEAN]) == verdicts(scoring, CLEAN, [CLEAN])
    assert verdicts(scoring, CLEAN, [DIRTY[name]]) == verdicts(scoring, CLEAN, [CLEAN])


def test_evidence_spans_point_into_the_text_sent(scoring: Scoring) -> None:
    event = AnswerEvent(id="a", answer=DIRTY["zero-width space"], contexts=[CLEAN])
    (found,) = score_answers([event], scoring.ctx, scoring.analyzer, Tier.NLP)
    hallucination = next(v for v in found if v.kind.value == "hallucination")
    spans = {(a["start"], a["end"], a["text"]) for a in hallucination.evidence["anchors"]}
    assert (4, 8, "c\u200bat") in spans
    for start, end, text in spans:
        assert event.answer[start:end] == text


def test_a_record_over_the_budget_defers_without_being_parsed(scoring: Scoring) -> None:
    long_answer = "Marie Curie won the Nobel Prize in 1903 in Stockholm. " * 60  # 3,240 chars
    started = time.perf_counter()
    found = verdicts(scoring, long_answer, ["Marie Curie won the Nobel Prize in 1903."])
    assert time.perf_counter() - started < 2.0
    for kind in ("hallucination", "faithfulness"):
        score, decision, code = found[kind]
        assert (score, decision, code) == (None, Decision.DEFER, ReasonCode.TOO_LONG_FOR_NLP)
    assert found["groundedness"][1] is not Decision.DEFER  # the lexical kinds still score


def test_the_reason_names_the_sizes_and_the_limits(scoring: Scoring) -> None:
    event = AnswerEvent(id="a", answer="Short answer.", contexts=["x " * 3_000])
    (found,) = score_answers([event], scoring.ctx, scoring.analyzer, Tier.NLP)
    for verdict in found:
        assert verdict.reasons[0].code is ReasonCode.TOO_LONG_FOR_NLP
        assert (
            "contexts of 6,000 characters > budget.context_chars 5,000" in verdict.reasons[0].detail
        )
        assert verdict.evidence["budget_context_chars"] == 5_000


def test_a_record_within_the_budget_is_scored(scoring: Scoring) -> None:
    found = verdicts(scoring, CLEAN, [CLEAN])
    assert found["faithfulness"][1] is Decision.PASS
