"""The segmented FAISS index against brute force: upserts, deletes, rebuilds, HNSW."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from verdictflow.rerank_api.vector_index import IndexConfig, VectorIndex, normalise

DIM = 16


def brute_force(live: dict[str, np.ndarray], query: np.ndarray, k: int) -> list[str]:
    q = query / np.linalg.norm(query)
    scored = [(d, float(v @ q)) for d, v in live.items()]
    scored.sort(key=lambda s: (-s[1], s[0]))
    return [d for d, _ in scored[:k]]


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    return normalise(rng.standard_normal((n, DIM)).astype(np.float32), DIM)


def test_flat_index_equals_brute_force_through_updates_deletes_and_compactions() -> None:
    rng = np.random.default_rng(7)
    index = VectorIndex(IndexConfig(dim=DIM, hnsw_threshold=10**9, delta_min=16))
    live: dict[str, np.ndarray] = {}
    for step in range(12):
        ids = [f"d{rng.integers(0, 80)}" for _ in range(10)]
        vecs = unit(rng, 10)
        index.upsert(ids, vecs)
        for d, v in zip(ids, vecs, strict=True):
            live[d] = v
        gone = [f"d{rng.integers(0, 80)}" for _ in range(3)]
        index.delete(gone)
        for d in gone:
            live.pop(d, None)
        if step % 3 == 2:
            index.compact()
        assert len(index) == len(live)
        for q in unit(rng, 3):
            got = [d for d, _ in index.search(q, 5)[0]]
            assert got == brute_force(live, q, 5)
    assert index.compactions >= 1


def test_upsert_replaces_the_vector_and_delete_hides_the_document() -> None:
    index = VectorIndex(IndexConfig(dim=DIM))
    a, b = np.eye(DIM, dtype=np.float32)[:2]
    index.upsert(["x", "y"], [a, b])
    assert index.search(a, 1)[0][0][0] == "x"
    index.upsert(["x"], [b])  # x moves next to y
    moved = index.search(a, 2)[0]
    assert {d for d, _ in moved} == {"x", "y"}
    assert all(abs(s) < 1e-6 for _, s in moved)
    index.delete(["y"])
    assert [d for d, _ in index.search(b, 5)[0]] == ["x"]
    assert len(index) == 1


def test_hnsw_main_segment_with_tombstones_and_rebuild() -> None:
    rng = np.random.default_rng(3)
    n = 3000
    vecs = unit(rng, n)
    ids = [f"doc{i:05d}" for i in range(n)]
    index = VectorIndex(IndexConfig(dim=DIM, hnsw_threshold=1000, ef_search=256, dead_ratio=0.1))
    index.load(ids, vecs)
    assert index.kind == "hnsw"
    killed = ids[: n // 5]
    index.delete(killed)
    live = dict(zip(ids[n // 5 :], vecs[n // 5 :], strict=True))
    queries = unit(rng, 20)
    recall = []
    for q in queries:
        got = [d for d, _ in index.search(q, 10)[0]]
        assert not set(got) & set(killed)  # tombstones are never returned
        recall.append(len(set(got) & set(brute_force(live, q, 10))) / 10)
    assert np.mean(recall) > 0.9
    assert index.needs_compaction()
    assert index.compact()
    assert index.stats()["main_dead"] == 0
    assert index.kind == "hnsw"
    assert len(index) == len(live)


def test_mutations_during_a_rebuild_survive_the_swap() -> None:
    rng = np.random.default_rng(5)
    index = VectorIndex(IndexConfig(dim=DIM, delta_min=4))
    index.upsert([f"a{i}" for i in range(8)], unit(rng, 8))
    started, release = threading.Event(), threading.Event()
    original_build = index._build

    def slow_build(ids: list[str], vectors: np.ndarray):  # type: ignore[no-untyped-def]
        started.set()
        release.wait(5)
        return original_build(ids, vectors)

    index._build = slow_build  # type: ignore[method-assign]
    worker = threading.Thread(target=index.compact)
    worker.start()
    assert started.wait(5)
    index.delete(["a0"])
    new = unit(rng, 1)
    index.upsert(["a1", "b0"], np.vstack([new, new]))
    release.set()
    worker.join(5)
    assert "a0" not in index
    assert len(index) == 8
    hits = dict(index.search(new[0], 10)[0])
    assert "a0" not in hits
    assert hits["a1"] == pytest.approx(1.0, abs=1e-5)
    assert hits["b0"] == pytest.approx(1.0, abs=1e-5)


def test_bad_vectors_are_refused() -> None:
    index = VectorIndex(IndexConfig(dim=DIM))
    with pytest.raises(ValueError, match="shape"):
        index.upsert(["x"], np.zeros((1, DIM + 1), dtype=np.float32))
    bad = np.zeros((1, DIM), dtype=np.float32)
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        index.upsert(["x"], bad)
