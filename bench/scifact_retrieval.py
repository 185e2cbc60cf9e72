"""Retrieval quality of the /search pipeline on BEIR SciFact (300 test queries), every mode.

Runs the retriever's own search (the code behind POST /search, without HTTP) over the 5,183
abstracts (title + text) with the default offline embedder, and scores nDCG@10 and recall@100
with ``verdictflow.evaluators.retrieval_metrics`` (checked equal to trec_eval). Blending uses
the default weights (0.85 / 0.15); SciFact has no quality rows, so every document gets 0.5 and
the blend cannot reorder anything: the figures are those of the retrieval modes themselves.

    python bench/scifact_retrieval.py [--data ../shared/data/scifact_beir]

Reference: BM25 nDCG@10 0.665 (BEIR paper, Anserini) - 0.679 (Anserini multifield).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from verdictflow.evaluators.embedding import default_embedder
from verdictflow.evaluators.retrieval_metrics import macro_average, ndcg_at_k, recall_at_k
from verdictflow.rerank_api.blend import Weights
from verdictflow.rerank_api.retriever import DocMeta, Retriever, SearchLimits
from verdictflow.rerank_api.vector_index import IndexConfig
from verdictflow.scoring_jobs.retrieval_eval.inputs import read_corpus, read_qrels, read_queries

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/scifact_beir")
    args = parser.parse_args()
    corpus = read_corpus(args.data / "corpus.jsonl")
    queries = read_queries(args.data / "queries.jsonl")
    qrels = read_qrels(args.data / "qrels/test.tsv")
    retriever = Retriever(default_embedder(384), IndexConfig(dim=384), SearchLimits())
    t0 = time.perf_counter()
    retriever.load([DocMeta(d.doc_id, d.text) for d in corpus], None)
    print(f"indexed {len(corpus)} documents in {time.perf_counter() - t0:.1f} s (embed + BM25)")
    print(f"{len(qrels)} test queries; reference BM25 nDCG@10 0.665-0.679 (BEIR, Anserini)\n")
    print("| mode | nDCG@10 | recall@100 | ms/query |")
    print("|---|---|---|---|")
    for mode in ("dense", "lexical", "hybrid"):
        ndcg, recall = [], []
        t0 = time.perf_counter()
        for qid in sorted(qrels):
            outcome = retriever.search(queries[qid], 100, lane=None, mode=mode, weights=Weights())
            ranked = [b.doc_id for b, _ in outcome.hits]
            ndcg.append(ndcg_at_k(ranked, qrels[qid], 10))
            recall.append(recall_at_k(ranked, qrels[qid], 100))
        ms = (time.perf_counter() - t0) * 1000 / len(qrels)
        print(f"| {mode} | {macro_average(ndcg):.4f} | {macro_average(recall):.4f} | {ms:.2f} |")


if __name__ == "__main__":
    main()
