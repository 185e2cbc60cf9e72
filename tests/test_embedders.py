"""Embedder selection: the offline default, the real neural model, and clear failures."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.neural import requires_neural
from verdictflow import embedders
from verdictflow.digests import file_digest
from verdictflow.embedders import (
    EmbedderUnavailable,
    embedder_identity,
    make_embedder,
    packaged_model_dir,
    weights_digest,
)
from verdictflow.evaluators.embedding import default_embedder


def test_default_is_the_embedder_shared_with_the_quality_agents() -> None:
    assert make_embedder("hashing", 384) is default_embedder(384)
    assert embedder_identity(default_embedder(384))["embedder"].startswith("vf-hash/1")


def test_unknown_embedder_is_refused_with_the_choices() -> None:
    with pytest.raises(EmbedderUnavailable, match="one of hashing, sentence-transformers"):
        make_embedder("word2vec", 384)


def test_no_weights_anywhere_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.delenv(embedders.MODEL_DIR_ENV, raising=False)
    monkeypatch.setattr(embedders, "packaged_model_dir", lambda: None)
    with pytest.raises(EmbedderUnavailable, match="set LNSP_EMBED_MODEL_DIR"):
        make_embedder("sentence-transformers", 384)


def test_a_model_dir_that_is_not_a_model_is_refused(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(embedders.MODEL_DIR_ENV, str(tmp_path))
    with pytest.raises(EmbedderUnavailable, match="not a sentence-transformers model directory"):
        make_embedder("sentence-transformers", 384)


def test_weights_digest_changes_with_any_file_but_not_the_onnx_export(tmp_path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    before = weights_digest(tmp_path)
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "model.onnx").write_bytes(b"export")
    assert weights_digest(tmp_path) == before
    (tmp_path / "model.safetensors").write_bytes(b"weightz")
    assert weights_digest(tmp_path) != before


@pytest.fixture(scope="module")
def minilm():
    return make_embedder("sentence-transformers", 384)


@pytest.mark.usefixtures("minilm")
class TestMiniLM:
    """The packaged all-MiniLM-L6-v2 weights, loaded for real."""

    pytestmark = requires_neural

    def test_rows_are_unit_length_and_semantic(self, minilm) -> None:
        texts = ["A cat sits on the mat.", "A kitten is lying on the rug.", "Stocks fell sharply."]
        vectors = minilm.embed(texts)
        assert vectors.shape == (3, 384)
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert float(vectors[0] @ vectors[1]) > 0.4 > float(vectors[0] @ vectors[2])
        hashed = default_embedder(384).embed(texts[:2])
        assert float(hashed[0] @ hashed[1]) < 0.1  # no shared words: hashing cannot see it

    def test_a_vector_does_not_depend_on_its_batch_or_threads(self, minilm) -> None:
        texts = ["short", "a much longer text about the Pacific Ocean and its islands " * 5]
        together = minilm.embed(texts)
        alone = np.vstack([minilm.embed([t]) for t in texts])
        assert together.tobytes() == alone.tobytes()
        two_threads = make_embedder("sentence-transformers", 384, threads=2)
        assert two_threads is not minilm
        assert two_threads.embed(texts).tobytes() == together.tobytes()

    def test_identity_names_model_weights_and_backend(self, minilm) -> None:
        identity = embedder_identity(minilm)
        assert identity["model"] == "all-MiniLM-L6-v2"
        assert identity["dim"] == 384
        assert identity["weights_sha256"] == weights_digest(packaged_model_dir())
        assert identity["backend"] in {"onnx", "torch"}
        assert identity["weights_sha256"][:16] in minilm.version

    def test_dimension_mismatch_is_refused(self, minilm) -> None:
        with pytest.raises(EmbedderUnavailable, match="gives 384-d vectors, the settings say 768"):
            make_embedder("sentence-transformers", 768)

    def test_a_local_model_dir_is_used(self, minilm, monkeypatch) -> None:
        monkeypatch.setenv(embedders.MODEL_DIR_ENV, str(packaged_model_dir()))
        assert make_embedder("sentence-transformers", 384) is minilm  # same directory

    def test_a_batched_pass_gives_each_text_its_lone_vector(self, minilm) -> None:
        """The micro-batcher's fp32 pass (padding to the longest) changes no query's vector."""
        if not minilm.batches:
            pytest.skip("no direct ONNX path (ONNX Runtime not installed)")
        texts = ["short", "a much longer query about the Pacific Ocean and its many islands",
                 "mid-length query on islands", "short"]  # fmt: skip
        batched = minilm.embed_batch(texts)
        alone = np.vstack([minilm.embed([t]) for t in texts])
        np.testing.assert_allclose(batched, alone, atol=1e-6)

    def test_the_int8_query_encoder_is_cached_identified_and_close(
        self, minilm, tmp_path, monkeypatch
    ) -> None:
        if minilm.backend != "onnx":
            pytest.skip("the int8 encoder needs ONNX Runtime")
        monkeypatch.setenv(embedders.CACHE_DIR_ENV, str(tmp_path))
        int8 = embedders.NeuralEmbedder(packaged_model_dir(), quantize="int8")
        cached = list((tmp_path / "onnx").glob("*.onnx"))
        assert len(cached) == 1
        assert int8.weights_sha256[:24] in cached[0].name
        assert [p.name for p in (tmp_path / "onnx").iterdir()] == [cached[0].name]  # no work files
        import onnx

        ops = {node.op_type for node in onnx.load(str(cached[0])).graph.node}
        # ONNX Runtime's BERT fusions ran before quantising: attention itself is int8
        assert {"QAttention", "SkipLayerNormalization", "BiasGelu"} <= ops, ops
        assert "EmbedLayerNormalization" in ops  # the embedding lookup stays fp32
        identity = embedder_identity(int8)
        assert identity["quantize"] == embedders.INT8_RECIPE
        assert identity["quantized_sha256"] == file_digest(cached[0])
        assert int8.version.startswith(minilm.version)
        assert int8.version != minilm.version
        assert "quantize" not in embedder_identity(minilm)  # fp32 identities unchanged
        texts = ["Vitamin D deficiency is linked to multiple sclerosis.", "What causes tides?"]
        cosines = np.sum(int8.embed(texts) * minilm.embed(texts), axis=1)
        assert cosines.min() > 0.97, cosines
        # a second process start reads the cache: same bytes, same vectors
        again = embedders.NeuralEmbedder(packaged_model_dir(), quantize="int8")
        assert again.quantized_sha256 == int8.quantized_sha256
        assert again.embed(texts).tobytes() == int8.embed(texts).tobytes()
