"""Answers in a script the pipelines cannot read DEFER from every kind, consistency included."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verdictflow.evaluators import variant_groups
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.language import latin_share, unsupported_script
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, ReasonCode
from verdictflow.scoring_setup import Scoring, load_scoring

CHINESE = "北京是中华人民共和国的首都，也是全国的政治、文化中心。"
ARABIC = "القاهرة هي عاصمة جمهورية مصر العربية وأكبر مدنها."


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return load_scoring(Policy())


@pytest.mark.parametrize("text", [CHINESE, ARABIC])
def test_every_kind_defers_an_answer_in_another_script(scoring: Scoring, text: str) -> None:
    event = AnswerEvent(
        id="a", query=text, answer=text, contexts=[text], variants=[text, text + "。"]
    )
    (verdicts,) = score_answers([event], scoring.ctx, scoring.analyzer)
    consistency = variant_groups.score_self_contained(event, scoring.ctx)
    assert len(verdicts) == 5
    for v in [*verdicts, consistency]:
        assert (v.decision, v.reasons[0].code) == (
            Decision.DEFER,
            ReasonCode.UNSUPPORTED_LANGUAGE,
        ), v.kind


def test_contexts_in_another_script_defer_an_english_answer(scoring: Scoring) -> None:
    event = AnswerEvent(
        id="a", query="capital?", answer="Beijing is the capital.", contexts=[CHINESE]
    )
    (verdicts,) = score_answers([event], scoring.ctx, scoring.analyzer)
    assert {v.reasons[0].code for v in verdicts} == {ReasonCode.UNSUPPORTED_LANGUAGE}


def test_a_quoted_name_or_another_latin_language_is_read() -> None:
    assert not unsupported_script("The capital of China is Beijing (北京).")
    assert not unsupported_script("La capitale de la France est Paris.")
    assert latin_share("2024-05-01") is None
    assert unsupported_script("Москва — столица России.")


@given(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=40))
def test_ascii_text_is_answered_as_the_counted_share_would(text: str) -> None:
    letters = len(re.findall(r"[^\W\d_]", text))
    assert latin_share(text) == (None if letters == 0 else 1.0)
