"""IQS signals (spec 004) with hand-computed values, and duplicate counting in FAISS."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from verdictflow.evaluators import doc_quality as dq
from verdictflow.evaluators.dup_index import (
    DuplicateIndex,
    VectorError,
    batch_dup_counts,
    unit_rows,
)
from verdictflow.evaluators.policy import Policy
from verdictflow.settings import QualitySettings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0.0),
        ("a" * 100, 1.0),  # in the 60-500 band, all alphanumeric
        ("a" * 60, 1.0),
        ("a" * 500, 1.0),
        ("a" * 30, 0.7 * 0.5 + 0.3),  # ramp 30/60
        ("abcd " * 20, 0.7 + 0.3 * 0.8),  # 100 chars, 80 alphanumeric
        ("a" * 750, 0.7 * 0.5 + 0.3),  # decay: 1 - 250/500
        ("a" * 1200, 0.3),  # no length credit past 1000
        ("a" * 99 + "\x01", 0.7 + 0.3 * 0.99 - 0.5),  # control character penalty
        ("\x00" * 10, 0.0),  # clamped at 0
        ("é" * 100, 1.0),  # Unicode letters are alphanumeric
        ("a\tb\nc\r" * 20, 0.7 + 0.3 * 0.5),  # tab/LF/CR are not control penalties
    ],
)
def test_text_health(text, expected):
    assert dq.text_health(text) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("k", "expected"), [(0, 0.0), (1, 1 / 6), (5, 0.5), (15, 0.75), (-1, 0)])
def test_graph_degree_soft_saturation(k, expected):
    assert dq.graph_degree(k) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(("d", "expected"), [(0, 0.0), (1, 1 / 3), (2, 2 / 3), (3, 1.0), (5, 1.0)])
def test_dup_penalty(d, expected):
    assert dq.dup_penalty(d) == pytest.approx(expected, abs=1e-15)


def test_cpesh_margin():
    assert dq.cpesh_margin(0.3, 0.6) == pytest.approx(0.4)
    assert dq.cpesh_margin(1.2, 0.1) == 0.0
    assert dq.cpesh_margin(-0.5, -0.2) == 1.0
    assert dq.cpesh_margin(math.nan, 0.1) == 0.0


def test_weighted_sum_with_spec_defaults():
    cfg = dq.QualityConfig()
    assert (cfg.w_text, cfg.w_graph, cfg.w_dup, cfg.w_cpesh, cfg.kdup) == (0.4, 0.3, 0.2, 0.1, 5)
    q, f = dq.score_features(1.0, 5, 1, None, cfg)
    assert (f.text, f.graph, f.dup_penalty, f.cpesh_margin) == (1.0, 0.5, 1 / 3, None)
    assert q == pytest.approx(0.4 + 0.3 * 0.5 + 0.2 * (2 / 3), abs=1e-15)
    q, _ = dq.score_features(1.0, 10**9, 0, 1.0, cfg)
    assert q == pytest.approx(1.0, abs=1e-8)
    q, _ = dq.score_features(0.0, 0, 3, 0.5, cfg)
    assert q == pytest.approx(0.05)


def test_config_rejects_bad_values_and_digest_tracks_changes():
    with pytest.raises(ValueError, match="kdup"):
        dq.QualityConfig(kdup=0)
    with pytest.raises(ValueError, match="w_text"):
        dq.QualityConfig(w_text=math.nan)
    assert dq.QualityConfig().digest() == dq.QualityConfig().digest()
    assert dq.QualityConfig().digest() != dq.QualityConfig(kdup=4).digest()


@given(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-5, max_value=10**6),
    st.integers(min_value=-5, max_value=100),
    st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
)
def test_quality_always_in_unit_interval(text, degree, dups, margin):
    q, f = dq.score_features(text, degree, dups, margin, dq.QualityConfig())
    for value in (q, f.text, f.graph, f.dup_penalty, f.cpesh_margin or 0.0):
        assert 0.0 <= value <= 1.0


def test_self_loops_are_ignored_and_edges_are_directed():
    assert dq.edge_key("a", "a") is None
    assert dq.edge_key("a", "b") != dq.edge_key("b", "a")


def _corpus(seed=3, n=400, dim=16):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, dim)).astype(np.float32)
    # clusters of 2..8 exact or near-exact copies, and one pair just below the threshold
    rows = [base]
    for size in range(2, 9):
        src = base[size]
        rows.append(np.stack([src + rng.normal(scale=1e-5, size=dim) for _ in range(size - 1)]))
    far = base[20] + rng.normal(scale=0.2, size=dim)
    rows.append(far[None, :].astype(np.float32))
    rows.append(np.zeros((2, dim), dtype=np.float32))  # two empty-text vectors
    return np.concatenate(rows).astype(np.float32)


def test_duplicate_counts_hand_checked_and_tie_independent():
    dim = 8
    a = np.eye(dim, dtype=np.float32)[0]
    vecs = np.stack([a, a, a, a, a, a, a, np.eye(dim, dtype=np.float32)[1], a * 0])
    unit = unit_rows(vecs)
    counts = batch_dup_counts(unit, kdup=5, threshold=0.999)
    # seven identical vectors: each has 6 others at cosine 1, capped at kdup = 5
    assert counts.tolist() == [5, 5, 5, 5, 5, 5, 5, 0, 0]
    assert batch_dup_counts(unit, kdup=2, threshold=0.999).tolist()[:7] == [2] * 7


def test_stream_index_counts_equal_batch_counts_in_any_insertion_order():
    vecs = _corpus()
    unit = unit_rows(vecs)
    batch = batch_dup_counts(unit, kdup=5, threshold=0.999)
    assert sorted(set(batch.tolist())) == [0, 1, 2, 3, 4, 5]
    assert batch[20] == 0  # the near miss (cosine < 0.999) is not a duplicate
    for order_seed in (0, 1):
        index = DuplicateIndex(vecs.shape[1], kdup=5, threshold=0.999)
        order = np.random.default_rng(order_seed).permutation(len(vecs))
        for i in order:
            index.upsert(f"d{i}", unit[i])
        stream = [index.dup_count(f"d{i}") for i in range(len(vecs))]
        one_search = [index.duplicates(f"d{i}")[0] for i in range(len(vecs))]
        assert one_search == stream
        assert stream == batch.tolist()


def test_stream_index_update_delete_and_dup_set():
    index = DuplicateIndex(4, kdup=5, threshold=0.999)
    x, y = unit_rows([[1, 0, 0, 0], [0, 1, 0, 0]])
    index.upsert("a", x)
    index.upsert("b", x)
    index.upsert("c", y)
    assert index.dup_set("a") == ["b"]
    assert (index.dup_count("a"), index.dup_count("c")) == (1, 0)
    index.upsert("b", y)  # b changes: now a duplicate of c
    assert index.dup_set("b") == ["c"]
    assert (index.dup_count("a"), index.dup_count("c")) == (0, 1)
    assert index.remove("c") == ["b"]  # b's count moved from 1 to 0
    assert index.remove("c") == []
    assert (len(index), index.dup_count("b"), index.dup_count("c")) == (2, 0, 0)


def test_an_update_names_exactly_the_documents_whose_capped_count_it_moved():
    """Random upserts, moves and deletes over three clusters of copies: the kept set sizes
    stay exact, and each update returns the documents whose min(kdup, count) changed."""
    rng = np.random.default_rng(7)
    centres = unit_rows(rng.normal(size=(3, 8)))
    index = DuplicateIndex(8, kdup=3, threshold=0.999)
    present: dict[str, int] = {}

    def capped() -> dict[str, int]:
        return {d: min(3, sum(1 for e, c in present.items() if e != d and c == k))
                for d, k in present.items()}  # fmt: skip

    for step in range(300):
        doc = f"d{rng.integers(0, 25)}"
        before = capped()
        if doc in present and rng.random() < 0.3:
            del present[doc]
            moved = index.remove(doc)
        else:
            present[doc] = int(rng.integers(0, 3))
            moved = index.upsert(doc, centres[present[doc]])
        after = capped()
        expected = sorted(d for d in after if d != doc and before.get(d) != after[d])
        assert moved == expected, step
        for d in present:
            assert index.dup_set_size(d) == sum(
                1 for e, c in present.items() if e != d and c == present[d]
            )


def test_bad_vectors_are_refused():
    with pytest.raises(VectorError, match="NaN"):
        unit_rows([[1.0, math.nan]])
    with pytest.raises(VectorError, match="dimension"):
        unit_rows([[1.0, 2.0]], dim=3)


def test_the_policy_section_is_the_spec_defaults_and_refuses_what_cannot_score() -> None:
    assert dq.QualityConfig.of(Policy().doc_quality) == dq.QualityConfig()
    changed = Policy.model_validate({"doc_quality": {"kdup": 7}})
    assert changed.digest() != Policy().digest()
    assert dq.QualityConfig.of(changed.doc_quality).kdup == 7
    for bad in ({"w_text": -0.1}, {"w_dup": "nan"}, {"kdup": 0}, {"dup_threshold": 0}, {"x": 1}):
        with pytest.raises(ValidationError):
            Policy.model_validate({"doc_quality": bad})


def test_score_knobs_in_the_environment_are_refused_not_ignored(monkeypatch) -> None:
    monkeypatch.setenv("VERDICTFLOW_QUALITY_W_TEXT", "0.9")
    with pytest.raises(ValidationError, match=r"doc_quality\.w_text"):
        QualitySettings()
    monkeypatch.delenv("VERDICTFLOW_QUALITY_W_TEXT")
    assert QualitySettings(dim=16).dim == 16
