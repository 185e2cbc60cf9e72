"""The default embedder: deterministic, normalised, near-duplicates at cosine ~1."""

from __future__ import annotations

import numpy as np

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
