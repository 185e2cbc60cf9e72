"""The retriever's search pipeline: the query-vector cache changes nothing but the cost, and
each hybrid fusion is the one asked for."""

from __future__ import annotations

import pytest

from tests.support.retrieval_corpus import TEXTS
from verdictflow.evaluators.embedding import default_embedder
from verdictflow.rerank_api.blend import Weights
from verdictflow.rerank_api.retriever import DocMeta, Retriever
from verdictflow.rerank_api.vector_index import IndexConfig


class CountingEmbedder:
    """The default embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        self.inner = default_embedder(384)
        self.dim, self.version = self.inner.dim, self.inner.version
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return self.inner.embed(texts)


def retriever(query_cache: int, fusion: str = "rrf") -> tuple[Retriever, CountingEmbedder]:
    embedder = CountingEmbedder()
    r = Retriever(embedder, IndexConfig(dim=384), fusion=fusion, query_cache=query_cache)
    r.load([DocMeta(d, t) for d, t in TEXTS.items()], None)
    embedder.texts = 0
    return r, embedder


def ranking(r: Retriever, query: str, mode: str = "dense") -> list[tuple[str, float]]:
    hits = r.search(query, 5, lane=None, mode=mode, weights=Weights()).hits  # type: ignore[arg-type]
    return [(b.doc_id, b.final_score) for b, _ in hits]


def test_a_cached_query_vector_gives_the_same_ranking_without_embedding_again() -> None:
    cached, counted = retriever(query_cache=2)
    plain, _ = retriever(query_cache=0)
    queries = ["largest ocean", "banana bread", "largest ocean", "kafka log", "largest ocean"]
    for q in queries:
        assert ranking(cached, q) == ranking(plain, q)
    assert counted.texts == 3  # "largest ocean" embedded once, then served from the cache
    assert cached.query_cache_stats() == {"hits": 2, "misses": 3, "entries": 2, "capacity": 2}
    assert plain.query_cache_stats()["capacity"] == 0


def test_a_cached_vector_cannot_be_changed_by_a_caller() -> None:
    r, _ = retriever(query_cache=8)
    vector = r.query_vector("largest ocean")
    with pytest.raises(ValueError, match="read-only"):
        vector[0, 0] = 1.0


def test_lexical_mode_embeds_nothing() -> None:
    r, counted = retriever(query_cache=8)
    ranking(r, "banana flour", mode="lexical")
    assert counted.texts == 0


def test_hybrid_uses_the_configured_fusion() -> None:
    rrf, _ = retriever(0, "rrf")
    combsum, _ = retriever(0, "combsum")
    q = "largest ocean on Earth"
    by_rrf, by_combsum = ranking(rrf, q, "hybrid"), ranking(combsum, q, "hybrid")
    assert [d for d, _ in by_rrf][:2] == [d for d, _ in by_combsum][:2]
    assert by_rrf != by_combsum  # other scores: the fusion is not ignored
    assert by_combsum[0][1] == pytest.approx(0.85 * 1.0 + 0.15 * 0.5)  # first in both lists
