"""Verdict construction: decisions, DEFER reasons, evidence caps, determinism."""

from __future__ import annotations

import pytest

from verdictflow.evaluators.answer_verdicts import (
    ScoringContext,
    VerdictMeta,
    score_consistency,
    score_groundedness,
    verdict_id,
)
from verdictflow.evaluators.policy import Policy
from verdictflow.models.codec import encode
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, ReasonCode, VerdictKind

CTX = ScoringContext(Policy())


def answer(**kw):
    base = {
        "id": "a1",
        "query": "q",
        "answer": "The cat sat on the mat.",
        "contexts": ["A cat is on a mat.", "The dog sat."],
    }
    return AnswerEvent.model_validate({**base, **kw})


def test_groundedness_pass_and_fail_on_spec_examples():
    both = score_groundedness(answer(), CTX)
    assert (both.score, both.decision) == (1.0, Decision.PASS)
    one = score_groundedness(answer(contexts=["A cat is on a mat."]), CTX)
    assert one.score == 0.6
    assert one.decision is Decision.FAIL
    assert one.reasons[0].code is ReasonCode.BELOW_THRESHOLD
    assert one.evidence["uncovered"] == ["sat", "the"]


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"answer": "  ...  "}, ReasonCode.EMPTY_ANSWER),
        ({"contexts": []}, ReasonCode.NO_CONTEXTS),
        ({"contexts": ["", "  !! "]}, ReasonCode.NO_CONTEXTS),
    ],
)
def test_groundedness_defers_on_insufficient_input(kw, code):
    verdict = score_groundedness(answer(**kw), CTX)
    assert verdict.decision is Decision.DEFER
    assert verdict.reasons[0].code is code
    assert verdict.score is None


def test_evidence_is_capped_but_counts_are_kept():
    ctx = ScoringContext(Policy(evidence={"max_tokens": 3}))
    words = " ".join(f"w{i}" for i in range(50))
    verdict = score_groundedness(answer(answer=words, contexts=["w1 w2 w3 w4"]), ctx)
    assert len(verdict.evidence["uncovered"]) == 3
    assert verdict.evidence["answer_token_count"] == 50
    assert verdict.evidence["covered_count"] == 4


def test_consistency_spec_example_and_pairs():
    answers = [
        ("a1", "the cat sits on the mat"),
        ("a1#v1", "cat sits on mat"),
        ("a1#v2", "the cat sat on the mat"),
    ]
    verdict = score_consistency("req", answers, CTX, VerdictMeta())
    assert round(verdict.score, 4) == 0.6556
    assert verdict.decision is Decision.PASS
    assert verdict.evidence["pairs"][0] == {"a": "a1", "b": "a1#v1", "jaccard": 0.8}


def test_consistency_is_independent_of_arrival_order():
    answers = [("x", "alpha beta"), ("y", "beta gamma"), ("z", "gamma delta alpha")]
    forward = score_consistency("r", answers, CTX, VerdictMeta())
    backward = score_consistency("r", answers[::-1], CTX, VerdictMeta())
    assert encode(forward) == encode(backward)


@pytest.mark.parametrize(
    ("answers", "expected", "code"),
    [
        ([("a", "only one")], None, ReasonCode.FEWER_THAN_TWO_VARIANTS),
        ([], None, ReasonCode.FEWER_THAN_TWO_VARIANTS),
        ([("a", " "), ("b", "?!")], None, ReasonCode.ALL_VARIANTS_EMPTY),
        ([("a", "x y"), ("b", "x y")], 3, ReasonCode.WINDOW_CLOSED),
    ],
)
def test_consistency_fails_closed(answers, expected, code):
    verdict = score_consistency("r", answers, CTX, VerdictMeta(), expected=expected)
    assert verdict.decision is Decision.DEFER
    assert verdict.reasons[0].code is code


def test_window_closed_keeps_partial_score():
    verdict = score_consistency("r", [("a", "x y"), ("b", "x y")], CTX, VerdictMeta(), expected=3)
    assert verdict.score == 1.0


def test_verdicts_are_byte_identical_across_runs_and_ids_track_config():
    first = encode(score_groundedness(answer(), CTX))
    second = encode(score_groundedness(answer(), ScoringContext(Policy())))
    assert first == second
    strict = ScoringContext(Policy(groundedness={"threshold": 0.95}))
    assert verdict_id("a1", VerdictKind.GROUNDEDNESS, CTX.config_digest) != verdict_id(
        "a1", VerdictKind.GROUNDEDNESS, strict.config_digest
    )
    assert score_groundedness(answer(), strict).config_digest == strict.config_digest


def test_meta_is_passed_through():
    verdict = score_groundedness(answer(model="m", tenant="t", group="g", ts=5.0), CTX)
    assert (verdict.model, verdict.tenant, verdict.group, verdict.event_ts) == ("m", "t", "g", 5.0)
