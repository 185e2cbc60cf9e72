"""The worked examples of spec 000 (Q1/Q2), as exact test vectors."""

from __future__ import annotations

import pytest

from verdictflow.evaluators.consistency import jaccard, mean_pairwise_jaccard
from verdictflow.evaluators.groundedness import groundedness
from verdictflow.evaluators.tokenize import Tokenizer

TOK = Tokenizer()
ANSWER = "The cat sat on the mat."
C1 = "A cat is on a mat."
C2 = "The dog sat."


def test_spec_token_sets():
    assert TOK.tokens(ANSWER) == {"the", "cat", "sat", "on", "mat"}
    assert TOK.tokens(C1) == {"a", "cat", "is", "on", "mat"}
    assert TOK.tokens(C2) == {"the", "dog", "sat"}


def test_q1_both_contexts_is_one():
    result = groundedness(TOK.tokens(ANSWER), [TOK.tokens(C1), TOK.tokens(C2)])
    assert result.score == 1.0
    assert result.covered == ("cat", "mat", "on", "sat", "the")
    assert result.uncovered == ()


def test_q1_first_context_only_is_three_fifths():
    result = groundedness(TOK.tokens(ANSWER), [TOK.tokens(C1)])
    assert result.score == pytest.approx(0.6, abs=0)
    assert result.covered == ("cat", "mat", "on")
    assert result.uncovered == ("sat", "the")


def test_q2_pairwise_values_and_mean():
    a1, a2, a3 = (
        TOK.tokens(t)
        for t in ("the cat sits on the mat", "cat sits on mat", "the cat sat on the mat")
    )
    assert jaccard(a1, a2) == 4 / 5
    assert jaccard(a1, a3) == 4 / 6
    assert jaccard(a2, a3) == 3 / 6
    result = mean_pairwise_jaccard([a1, a2, a3])
    assert round(result.score, 4) == 0.6556
    assert result.score == pytest.approx((0.8 + 4 / 6 + 0.5) / 3, rel=1e-15)
    assert [p[:2] for p in result.pairs] == [(0, 1), (0, 2), (1, 2)]
