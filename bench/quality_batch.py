"""Batch quality scoring (``score-quality``'s core) against raw FAISS on the same vectors.

Synthetic 384-d vectors (Gaussian, 5 % of rows planted as near-duplicates of another row),
texts of varied length. Reference, measured in the same run: building an exact
inner-product index and searching every row for its kdup + 1 nearest (what any duplicate
penalty must at least do). verdictflow adds the exact float64 re-check of candidates, text
health, degrees and the weighted sum.

    python bench/quality_batch.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import time

import faiss
import numpy as np
from harness import machine

from verdictflow.evaluators.doc_quality import QualityConfig
from verdictflow.evaluators.dup_index import unit_rows
from verdictflow.scoring_jobs.batch.score_quality import Corpus, score_corpus


def corpus(n: int, dim: int = 384, seed: int = 0) -> Corpus:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    planted = rng.choice(n, size=n // 20, replace=False)
    vecs[planted] = vecs[rng.integers(0, n, size=planted.size)] + rng.normal(
        scale=1e-4, size=(planted.size, dim)
    ).astype(np.float32)
    texts = [("word " * (i % 150)).strip() for i in range(n)]
    return Corpus([f"d{i}" for i in range(n)], texts, vecs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = ap.parse_args()
    print(machine(), f"| faiss {faiss.__version__} | threads {faiss.omp_get_max_threads()}")
    cfg = QualityConfig()
    for n in args.sizes:
        c = corpus(n)
        t0 = time.perf_counter()
        unit = unit_rows(c.vectors)
        index = faiss.IndexFlatIP(unit.shape[1])
        index.add(unit)
        index.search(unit, cfg.kdup + 1)
        ref = time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = score_corpus(c, cfg, None, {})
        ours = time.perf_counter() - t0
        dup_docs = sum(r.features.dup_penalty > 0 for r in rows)
        print(
            f"n={n:>7} d=384: verdictflow {n / ours:9.0f} docs/s ({ours:.2f} s) | raw FAISS "
            f"build+search {n / ref:9.0f} docs/s ({ref:.2f} s) | ratio {ref / ours:.2f} | "
            f"{dup_docs} docs with duplicates"
        )


if __name__ == "__main__":
    main()
