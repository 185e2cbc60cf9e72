"""/search's index past one machine's comfort: memory, build time and recall of HNSW and a
compressed index (IVF-PQ) at 384 dimensions, for docs/scaling.md.

1. **Build and memory, random unit vectors** (``--sizes``, default 100k and 300k): the API's
   HNSW (``IndexHNSWFlat``, its M / efConstruction / efSearch) and IVF-PQ (``IndexIVFPQ``,
   nlist = 4 sqrt(N), 48 sub-quantisers x 8 bits, trained on min(N, 100k) vectors, nprobe 32):
   build seconds, serialised bytes per vector, per-query search time (one query at a time,
   one FAISS thread, as the API runs) and recall@10 against exact search. The per-million
   figures are these, scaled linearly (stated as such in the output).
2. **Recall lost to compression on real text** (needs ``../shared/data/scifact_beir`` and the
   ``[st]`` extra): SciFact's 5,183 abstracts embedded with all-MiniLM-L6-v2 (cached under
   ``$VERDICTFLOW_CACHE_DIR/bench`` after the first run, ~4 minutes here), its 300 test claims
   as queries; nDCG@10 and recall@10 for flat (the reference), HNSW and IVF-PQ (nlist 64 for
   5k vectors, m = 48 and 96), with this repo's metric code (as rq-eval computes them).

    python bench/index_scaling.py [--sizes 100000 300000] [--skip-scifact]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import machine

from verdictflow.rerank_api.settings import ApiSettings

DATA = Path(__file__).resolve().parents[2] / "shared/data/scifact_beir"
DIM = 384


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def serialised_bytes(index: faiss.Index) -> int:
    with tempfile.NamedTemporaryFile() as tmp:
        faiss.write_index(index, tmp.name)
        return os.path.getsize(tmp.name)


def hnsw(vectors: np.ndarray, api: ApiSettings) -> faiss.Index:
    index = faiss.IndexHNSWFlat(vectors.shape[1], api.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = api.ef_construction
    index.add(vectors)
    index.hnsw.efSearch = api.ef_search
    return index


def ivfpq(vectors: np.ndarray, nlist: int, m: int, nprobe: int) -> faiss.Index:
    quantizer = faiss.IndexFlatIP(vectors.shape[1])
    index = faiss.IndexIVFPQ(quantizer, vectors.shape[1], nlist, m, 8, faiss.METRIC_INNER_PRODUCT)
    rng = np.random.default_rng(7)
    train = vectors[rng.choice(len(vectors), min(len(vectors), 100_000), replace=False)]
    index.train(train)
    index.add(vectors)
    index.nprobe = nprobe
    return index


def recall_at(found: np.ndarray, truth: np.ndarray, k: int) -> float:
    hits = sum(len(set(f[:k]) & set(t[:k])) for f, t in zip(found, truth, strict=True))
    return hits / (k * len(truth))


def per_query_ms(index: faiss.Index, queries: np.ndarray, k: int) -> float:
    start = time.perf_counter()
    for q in queries:
        index.search(q[None, :], k)
    return (time.perf_counter() - start) / len(queries) * 1000


def synthetic(sizes: list[int], api: ApiSettings) -> None:
    print("\n## Random unit vectors, 384-d (build on all cores, search on one thread)\n")
    print("| N | index | build s | bytes/vector | search ms/query | recall@10 vs exact |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    per_million: dict[str, tuple[float, float]] = {}
    for n in sizes:
        vectors = rng.standard_normal((n, DIM)).astype(np.float32)
        faiss.normalize_L2(vectors)
        queries = rng.standard_normal((200, DIM)).astype(np.float32)
        faiss.normalize_L2(queries)
        faiss.omp_set_num_threads(1)
        exact = faiss.IndexFlatIP(DIM)
        exact.add(vectors)
        _, truth = exact.search(queries, 10)
        flat_ms = per_query_ms(exact, queries[:50], 10)
        print(f"| {n:,} | flat (exact) | 0 | {serialised_bytes(exact) / n:.0f} | {flat_ms:.2f} "
              f"| 1.000 |")  # fmt: skip
        nlist = 4 * int(math.sqrt(n))
        builds = {
            f"HNSW M={api.hnsw_m} efC={api.ef_construction} efS={api.ef_search}":
                lambda v: hnsw(v, api),
            f"IVF-PQ nlist={nlist} m=48x8b nprobe=32": lambda v, nl=nlist: ivfpq(v, nl, 48, 32),
        }  # fmt: skip
        for label, build in builds.items():
            faiss.omp_set_num_threads(os.cpu_count() or 1)
            t0 = time.perf_counter()
            index = build(vectors)
            seconds = time.perf_counter() - t0
            faiss.omp_set_num_threads(1)
            _, found = index.search(queries, 10)
            size = serialised_bytes(index)
            search_ms = per_query_ms(index, queries, 10)
            print(f"| {n:,} | {label} | {seconds:.1f} | {size / n:.0f} | {search_ms:.2f} | "
                  f"{recall_at(found, truth, 10):.3f} |")  # fmt: skip
            per_million[label.split()[0]] = (seconds * 1e6 / n, size * 1e6 / n)
            del index
    print("\nPer million documents, scaled linearly from the largest size above (HNSW build is "
          "N log N, so this is a lower bound):")  # fmt: skip
    for kind, (seconds, size) in per_million.items():
        print(f"- {kind}: build ~{seconds / 60:.0f} min on {os.cpu_count()} cores, "
              f"index ~{size / 2**30:.2f} GiB")  # fmt: skip


def scifact_vectors() -> tuple[list[str], np.ndarray, np.ndarray, list[str], dict]:
    """Document ids, their vectors, the test claims' vectors, claim ids, qrels."""
    from verdictflow.embedders import cache_dir, make_embedder
    from verdictflow.scoring_jobs.retrieval_eval.inputs import read_corpus, read_qrels, read_queries

    corpus = read_corpus(DATA / "corpus.jsonl")
    qrels = read_qrels(DATA / "qrels/test.tsv")
    queries = {q: t for q, t in read_queries(DATA / "queries.jsonl").items() if q in qrels}
    embedder = make_embedder("sentence-transformers", DIM, threads=os.cpu_count() or 1)
    digest = hashlib.sha256((embedder.version + "".join(d.doc_id for d in corpus)).encode())
    path = cache_dir() / "bench" / f"scifact-{digest.hexdigest()[:16]}.npy"
    if path.is_file():
        vectors = np.load(path)
    else:
        print(f"embedding {len(corpus):,} SciFact abstracts (once; cached as {path}) ...")
        vectors = np.vstack([embedder.embed([d.text for d in corpus[i : i + 64]])
                             for i in range(0, len(corpus), 64)])  # fmt: skip
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    qvecs = embedder.embed(list(queries.values()))
    return [d.doc_id for d in corpus], vectors, qvecs, list(queries), qrels


def query_encoders(texts: list[str]) -> dict[str, np.ndarray]:
    """The test claims' vectors from each way the API can embed a query."""
    from verdictflow.embedders import make_embedder

    fp32 = make_embedder("sentence-transformers", DIM)
    int8 = make_embedder("sentence-transformers", DIM, quantize="int8")
    order = np.random.default_rng(11).permutation(len(texts))  # random batch-mates
    batched = {}
    for encoder, name in ((fp32, "fp32"), (int8, "int8")):
        rows = np.zeros((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(texts), 8):
            idx = order[start : start + 8]
            rows[idx] = encoder.embed_batch([texts[i] for i in idx])  # type: ignore[attr-defined]
        batched[name] = rows
    return {
        "fp32, one query per pass (reference)": fp32.embed(texts),
        "fp32, batches of 8": batched["fp32"],
        "int8, one query per pass": int8.embed(texts),
        "int8, batches of 8 (random batch-mates)": batched["int8"],
    }


def scifact(api: ApiSettings) -> None:
    from verdictflow.evaluators.retrieval_metrics import ndcg_at_k, recall_at_k

    ids, vectors, qvecs, queries, qrels = scifact_vectors()
    encoders_section(ids, vectors, queries, qrels)
    print(f"\n## SciFact: {len(ids):,} abstracts, {len(queries)} test claims, MiniLM vectors\n")
    print("| index | bytes/vector | nDCG@10 | recall@10 | top-10 overlap with flat |")
    print("|---|---|---|---|---|")
    faiss.omp_set_num_threads(1)
    flat = faiss.IndexFlatIP(DIM)
    flat.add(vectors)
    _, reference = flat.search(qvecs, 10)
    indexes = {
        "flat (exact)": flat,
        "HNSW (the API's)": hnsw(vectors, api),
        "IVF-PQ nlist=64 m=48x8b nprobe=16": ivfpq(vectors, 64, 48, 16),
        "IVF-PQ nlist=64 m=96x8b nprobe=16": ivfpq(vectors, 64, 96, 16),
    }
    for label, index in indexes.items():
        _, found = index.search(qvecs, 10)
        ndcg, recall = [], []
        for row, qid in zip(found, queries, strict=True):
            ranking = [ids[i] for i in row if i >= 0]
            ndcg.append(ndcg_at_k(ranking, qrels[qid], 10))
            recall.append(recall_at_k(ranking, qrels[qid], 10))
        print(f"| {label} | {serialised_bytes(index) / len(ids):.0f} | {np.mean(ndcg):.4f} | "
              f"{np.mean(recall):.4f} | {recall_at(found, reference, 10):.3f} |")  # fmt: skip


def encoders_section(ids: list[str], vectors: np.ndarray, queries: list[str], qrels: dict) -> None:
    from verdictflow.evaluators.retrieval_metrics import ndcg_at_k
    from verdictflow.scoring_jobs.retrieval_eval.inputs import read_queries

    texts_by_id = read_queries(DATA / "queries.jsonl")
    texts = [texts_by_id[q] for q in queries]
    encoders = query_encoders(texts)
    flat = faiss.IndexFlatIP(DIM)
    flat.add(vectors)
    reference_vectors = encoders["fp32, one query per pass (reference)"]
    _, reference = flat.search(reference_vectors, 10)
    print(f"\n## Query encoders on SciFact ({len(texts)} test claims, flat index, fp32 docs)\n")
    print("| query encoder | nDCG@10 | cosine to fp32 min / mean | top-10 overlap with fp32 |")
    print("|---|---|---|---|")
    for label, qv in encoders.items():
        _, found = flat.search(qv, 10)
        ndcg = np.mean([ndcg_at_k([ids[i] for i in row], qrels[q], 10)
                        for row, q in zip(found, queries, strict=True)])  # fmt: skip
        cos = np.sum(qv * reference_vectors, axis=1)
        print(f"| {label} | {ndcg:.4f} | {cos.min():.4f} / {cos.mean():.4f} | "
              f"{recall_at(found, reference, 10):.3f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000])
    parser.add_argument("--skip-scifact", action="store_true")
    args = parser.parse_args()
    api = ApiSettings()
    print(machine())
    print(f"load average at start: {load_avg()}; faiss {faiss.__version__}")
    synthetic(args.sizes, api)
    if not args.skip_scifact and DATA.is_dir():
        scifact(api)
    print(f"\nload average at end: {load_avg()}")


if __name__ == "__main__":
    main()
