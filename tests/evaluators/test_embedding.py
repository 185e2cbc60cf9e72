"""The default embedder: deterministic, normalised, near-duplicates at cosine ~1."""

from __future__ import annotations

import numpy as np

from tests.support.paths import SHARED_DATA
from tests.support.scorer_bytes import labelled_texts
from verdictflow.evaluators.embedding import DEFAULT_DIM, HashingEmbedder, embed_texts


def test_shape_dtype_and_norm() -> None:
    vectors = embed_texts(["The cat sat on the mat.", "Kafka partitions are ordered logs."])
    assert vectors.shape == (2, DEFAULT_DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_deterministic_across_instances() -> None:
    text = ["Streaming evaluation of model answers"]
    assert HashingEmbedder().embed(text).tobytes() == HashingEmbedder().embed(text).tobytes()


def test_case_and_stop_words_do_not_move_a_vector() -> None:
    a, b = embed_texts(["The quick brown fox", "quick BROWN fox"])
    assert float(a @ b) > 0.999


def test_unrelated_texts_are_far_and_empty_text_is_zero() -> None:
    a, b, empty = embed_texts(["quantum chromodynamics lattice", "banana bread recipe", "the of"])
    assert float(a @ b) < 0.5
    assert not empty.any()


def test_empty_batch() -> None:
    assert embed_texts([]).shape == (0, DEFAULT_DIM)


def _hashing_vectorizer_rows(texts: list[str], dim: int) -> np.ndarray:
    """The embedder as it was built on scikit-learn's ``HashingVectorizer`` (until 2026-11-30)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    vectorizer = HashingVectorizer(
        n_features=dim, alternate_sign=True, norm=None, stop_words="english", dtype=np.float64
    )
    sparse = vectorizer.transform(texts)
    sparse.data = np.sign(sparse.data) * np.log1p(np.abs(sparse.data))
    dense = np.asarray(sparse.toarray(), dtype=np.float64)
    norms = np.linalg.norm(dense, axis=1, keepdims=True)
    return np.divide(dense, norms, out=np.zeros_like(dense), where=norms > 0).astype(np.float32)


def test_vectors_are_scikit_learns_hashing_vectorizers_bit_for_bit() -> None:
    """The embedder computes ``HashingVectorizer``'s vectors without scikit-learn (whose
    import was 2 s of every worker's start): the same bytes, on the data's questions, answers
    and contexts (words that collide with opposite signs, long documents) and on edge texts,
    at three dimensions."""
    texts = ["", "the a an", "Hello hello HELLO world", "İstanbul ΣΊΣΥΦΟΣ ﬁle x_y 42"]
    texts += labelled_texts()
    assert len(texts) > 1000 or not SHARED_DATA.is_dir()
    for dim in (8, 384, 1000):
        got = HashingEmbedder(dim).embed(texts)
        assert got.tobytes() == _hashing_vectorizer_rows(texts, dim).tobytes()
