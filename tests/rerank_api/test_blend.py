"""Pure ranking arithmetic: the spec's blend, ties by doc_id, RRF, over-fetch."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verdictflow.rerank_api.blend import (
    DEFAULT_QUALITY,
    Weights,
    blend,
    candidate_count,
    combsum_fusion,
    fuse,
    normalise_by_max,
    reciprocal_rank_fusion,
)


def test_final_score_is_the_spec_formula_and_missing_quality_is_half() -> None:
    out = blend([("a", 0.8), ("b", 0.6)], {"b": 1.0}, Weights(0.85, 0.15), top_k=2)
    assert [r.doc_id for r in out] == ["a", "b"]
    assert out[0].quality == DEFAULT_QUALITY
    assert out[0].final_score == pytest.approx(0.85 * 0.8 + 0.15 * 0.5)
    assert out[1].final_score == pytest.approx(0.85 * 0.6 + 0.15 * 1.0)


def test_quality_lifts_a_lower_cosine_document_and_weights_change_the_order() -> None:
    cands = [("a", 0.80), ("b", 0.70)]
    quality = {"a": 0.0, "b": 1.0}
    assert [r.doc_id for r in blend(cands, quality, Weights(1.0, 0.0), 2)] == ["a", "b"]
    assert [r.doc_id for r in blend(cands, quality, Weights(0.5, 0.5), 2)] == ["b", "a"]


def test_ties_go_to_the_smaller_doc_id_whatever_the_input_order() -> None:
    cands = [("z", 0.5), ("m", 0.5), ("a", 0.5)]
    assert [r.doc_id for r in blend(cands, {}, Weights(), 3)] == ["a", "m", "z"]
    assert [r.doc_id for r in blend(cands[::-1], {}, Weights(), 2)] == ["a", "m"]


def test_duplicate_candidates_keep_their_best_score() -> None:
    out = blend([("a", 0.2), ("a", 0.9)], {}, Weights(1.0, 0.0), 5)
    assert [(r.doc_id, r.score) for r in out] == [("a", 0.9)]


def test_rrf_is_one_for_a_document_first_everywhere_and_sorted() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["a", "c"]])
    assert fused[0] == ("a", 1.0)
    assert [d for d, _ in fused] == ["a", "c", "b"]
    assert reciprocal_rank_fusion([]) == []


def test_combsum_averages_max_normalised_scores_with_a_floor_for_absent_documents() -> None:
    dense = [("a", 0.8), ("b", 0.4), ("c", 0.2)]
    bm25 = [("b", 12.0), ("d", 6.0)]
    fused = dict(combsum_fusion([dense, bm25]))
    # dense /0.8 -> a 1, b .5, c .25; bm25 /12 -> b 1, d .5; absent: the list's lowest value
    assert fused == pytest.approx({"a": (1 + 0.5) / 2, "b": (0.5 + 1) / 2, "c": (0.25 + 0.5) / 2,
                                   "d": (0.25 + 0.5) / 2})  # fmt: skip
    order = [d for d, _ in combsum_fusion([dense, bm25])]
    assert order == ["a", "b", "c", "d"]  # a and b tie at 0.75: by doc_id; so do c and d
    assert combsum_fusion([dense, []]) == [(d, s / 0.8) for d, s in dense]
    assert combsum_fusion([[], []]) == []


def test_fuse_names_each_method_and_refuses_others() -> None:
    lists = [[("a", 0.9), ("b", 0.1)], [("b", 3.0), ("a", 1.0)]]
    assert fuse("rrf", lists) == reciprocal_rank_fusion([["a", "b"], ["b", "a"]])
    assert fuse("combsum", lists) == combsum_fusion(lists)
    with pytest.raises(ValueError, match="unknown fusion 'max'"):
        fuse("max", lists)  # type: ignore[arg-type]


def test_normalise_by_max_drops_non_positive_scores() -> None:
    assert normalise_by_max([("a", 4.0), ("b", 2.0), ("c", 0.0)]) == [("a", 1.0), ("b", 0.5)]
    assert normalise_by_max([("a", 0.0)]) == []


def test_candidate_count_overfetches_within_bounds() -> None:
    assert candidate_count(10, 5, 100, 2000) == 100
    assert candidate_count(50, 5, 100, 2000) == 250
    assert candidate_count(900, 5, 100, 2000) == 2000
    assert candidate_count(3000, 5, 100, 2000) == 3000  # never fewer than top_k


@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=3), st.floats(-1, 1)), min_size=0, max_size=30),
    st.dictionaries(st.text(min_size=1, max_size=3), st.floats(0, 1)),
    st.floats(0, 1),
    st.floats(0, 1),
    st.integers(1, 40),
)
def test_blend_is_sorted_unique_bounded_and_order_invariant(
    cands: list[tuple[str, float]],
    quality: dict[str, float],
    w_cos: float,
    w_q: float,
    k: int,
) -> None:
    w = Weights(w_cos, w_q)
    out = blend(cands, quality, w, k)
    assert len(out) == min(k, len({d for d, _ in cands}))
    keys = [(-r.final_score, r.doc_id) for r in out]
    assert keys == sorted(keys)
    assert out == blend(cands[::-1], quality, w, k)
