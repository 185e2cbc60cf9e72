"""Invariants, by hypothesis: ranges, symmetry, order invariance, codec round trips."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from verdictflow.evaluators.consistency import jaccard, mean_pairwise_jaccard
from verdictflow.evaluators.groundedness import groundedness
from verdictflow.evaluators.tokenize import Tokenizer
from verdictflow.models.codec import decode, encode
from verdictflow.models.events import AnswerEvent

TOK = Tokenizer()
texts = st.text(max_size=200)
token_sets = st.frozensets(st.sampled_from("abcdefghij"), max_size=8)


@given(texts, st.lists(texts, max_size=5))
def test_groundedness_in_unit_interval(answer, contexts):
    result = groundedness(TOK.tokens(answer), [TOK.tokens(c) for c in contexts])
    if result.score is None:
        assert not TOK.tokens(answer)
    else:
        assert 0.0 <= result.score <= 1.0
        assert set(result.covered) | set(result.uncovered) == set(TOK.tokens(answer))


@given(texts, st.lists(texts, min_size=1, max_size=5))
def test_groundedness_ignores_context_order(answer, contexts):
    a = TOK.tokens(answer)
    assert groundedness(a, [TOK.tokens(c) for c in contexts]) == groundedness(
        a, [TOK.tokens(c) for c in reversed(contexts)]
    )


@given(texts)
def test_answer_is_grounded_in_itself(answer):
    result = groundedness(TOK.tokens(answer), [TOK.tokens(answer)])
    assert result.score in (None, 1.0)


@given(token_sets, token_sets)
def test_jaccard_symmetric_and_bounded(a, b):
    assert jaccard(a, b) == jaccard(b, a)
    assert 0.0 <= jaccard(a, b) <= 1.0
    assert jaccard(a, a) == 1.0


@given(st.lists(token_sets, min_size=2, max_size=7), st.randoms(use_true_random=False))
def test_mean_pairwise_jaccard_order_invariant(sets, rnd):
    shuffled = list(sets)
    rnd.shuffle(shuffled)
    first = mean_pairwise_jaccard(sets).score
    assert first is not None
    assert 0.0 <= first <= 1.0
    assert mean_pairwise_jaccard(shuffled).score == first


event_dicts = st.fixed_dictionaries(
    {"id": st.text(min_size=1, max_size=20), "answer": texts},
    optional={
        "request_id": st.text(min_size=1, max_size=20),
        "contexts": st.lists(texts, max_size=3),
        "variants": st.lists(texts, max_size=3),
        "expected_variants": st.integers(1, 10),
        "tenant": st.text(max_size=10),
    },
)


@given(event_dicts)
def test_codec_round_trip(data):
    event = decode(orjson.dumps(data), AnswerEvent)
    assert decode(encode(event), AnswerEvent) == event
