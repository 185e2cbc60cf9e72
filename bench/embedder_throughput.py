"""Cost of the neural embedder: documents per second, query latency and memory, against the raw
sentence-transformers ``encode`` in the same run.

What the docs agent does with a document that arrives without a vector is
``NeuralEmbedder.embed`` (one text at a time, so a vector never depends on its batch); the
reference is the library's own batched ``encode`` (batch 16, sorted by length, the usual way
to embed many texts at once) on the same model object (one ONNX Runtime thread). Documents:
SciFact abstracts (title + text, ~1.5 KB; the model truncates at 256 word pieces). Queries:
SciFact claims.

    python bench/embedder_throughput.py [--docs 300] [--queries 300]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import machine

from verdictflow.embedders import NeuralEmbedder, packaged_model_dir
from verdictflow.scoring_jobs.retrieval_eval.inputs import read_corpus, read_queries

DATA = Path(__file__).resolve().parents[2] / "shared/data/scifact_beir"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    print(machine())
    docs = [d.text for d in read_corpus(args.data / "corpus.jsonl")][: args.docs]
    claims = list(read_queries(args.data / "queries.jsonl").values())[: args.queries]
    model_dir = packaged_model_dir()
    if model_dir is None:
        raise SystemExit("the [st] extra is not installed (docs/retriever.md, Embedders)")
    before = rss_mb()
    t0 = time.perf_counter()
    one = NeuralEmbedder(model_dir, threads=1)
    load_s = time.perf_counter() - t0
    print(f"{one.version}: loaded in {load_s:.1f} s, peak RSS +{rss_mb() - before:.0f} MB")
    print(f"{len(docs)} documents of {np.mean([len(d) for d in docs]):.0f} characters on average,"
          f" {len(claims)} queries of {np.mean([len(q) for q in claims]):.0f}\n")  # fmt: skip

    two = NeuralEmbedder(model_dir, threads=2)
    rows = []
    for label, embedder in (("embed(), one text at a time, 1 thread", one),
                            ("embed(), one text at a time, 2 threads", two)):  # fmt: skip
        t = time.perf_counter()
        vectors = embedder.embed(docs)
        rows.append((label, len(docs) / (time.perf_counter() - t)))
    model = one._model  # the raw library call on the same model: the reference
    order = np.argsort([len(d) for d in docs])
    t = time.perf_counter()
    raw = model.encode([docs[i] for i in order], batch_size=16, normalize_embeddings=True,
                       show_progress_bar=False)  # fmt: skip
    raw_rate = len(docs) / (time.perf_counter() - t)
    back = np.zeros_like(raw)
    back[order] = raw
    print("| documents | docs/s | ratio to raw |")
    print("|---|---|---|")
    for label, rate in rows:
        print(f"| {label} | {rate:.1f} | {rate / raw_rate:.2f} |")
    print(f"| reference: raw encode(), batches of 16 by length, 1 thread | {raw_rate:.1f} "
          f"| 1.00 |")  # fmt: skip
    print(f"\nmax |embed - raw encode| over the documents: {np.abs(vectors - back).max():.2e}")

    lat, raw_lat = [], []
    for q in claims:
        t = time.perf_counter()
        one.embed([q])
        lat.append(time.perf_counter() - t)
        t = time.perf_counter()
        model.encode([q], normalize_embeddings=True, show_progress_bar=False)
        raw_lat.append(time.perf_counter() - t)
    ms = np.asarray(lat) * 1000
    raw_ms = np.asarray(raw_lat) * 1000
    print("\n| one query | p50 ms | p99 ms |")
    print("|---|---|---|")
    print(f"| embed([q]), 1 thread | {np.percentile(ms, 50):.2f} | {np.percentile(ms, 99):.2f} |")
    print(f"| reference: raw encode([q]) | {np.percentile(raw_ms, 50):.2f} | "
          f"{np.percentile(raw_ms, 99):.2f} |")  # fmt: skip
    print(f"\npeak RSS of this process: {rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
