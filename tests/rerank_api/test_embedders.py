"""Embedder selection: the shared offline default, and the optional model failing clearly."""

from __future__ import annotations

import importlib.util

import pytest

from verdictflow.evaluators.embedding import default_embedder
from verdictflow.rerank_api.embedders import EmbedderUnavailable, make_embedder

HAS_ST = importlib.util.find_spec("sentence_transformers") is not None


def test_default_is_the_embedder_shared_with_the_quality_agents() -> None:
    assert make_embedder("hashing", 384) is default_embedder(384)


@pytest.mark.skipif(HAS_ST, reason="sentence-transformers is installed here")
def test_optional_model_without_the_extra_is_a_clear_error() -> None:
    with pytest.raises(EmbedderUnavailable, match="sentence-transformers is not installed"):
        make_embedder("sentence-transformers", 384, model_dir="/nonexistent")


@pytest.mark.skipif(not HAS_ST, reason="optional extra sentence-transformers not installed")
def test_optional_model_embeds_normalised_rows() -> None:  # pragma: no cover - extra only
    try:
        embedder = make_embedder("sentence-transformers", 384)
    except EmbedderUnavailable as exc:
        pytest.skip(str(exc))
    vectors = embedder.embed(["a cat", "a dog"])
    assert vectors.shape == (2, 384)
