"""Time to evaluate a 300-query, k=1000 run: verdictflow's metrics next to pytrec_eval.

The run is synthetic but realistic in shape: SciFact's 300 test queries and qrels
(``../shared/data/scifact_beir``), 1,000 distinct documents per query with distinct scores,
the relevant ones placed at seeded random ranks. Both sides start from the same in-memory run
and qrels and compute recall@1000, MRR (reciprocal rank) and nDCG@1000; the figures are also
checked to agree. Best of 5 repetitions each. A third line times what ``rq-eval`` does with the
same run as system A and B: the whole report (ranking both runs, per-query rows with hits,
deltas, rounding) and its JSON bytes.

    python bench/rq_eval_speed.py
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytrec_eval
from harness import machine

from verdictflow.evaluators.retrieval_metrics import (
    macro_average,
    mrr_at_k,
    ndcg_at_k,
    rank_by_score,
    recall_at_k,
)
from verdictflow.scoring_jobs.retrieval_eval.inputs import read_corpus, read_qrels
from verdictflow.scoring_jobs.retrieval_eval.rq_eval import evaluate, report_json
from verdictflow.scoring_jobs.retrieval_eval.systems import System

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact_beir"
K = 1000


def build_run(qrels: dict[str, dict[str, int]], doc_ids: list[str]) -> dict[str, dict[str, float]]:
    rng = random.Random(1)
    run = {}
    for qid, judged in sorted(qrels.items()):
        docs = rng.sample(doc_ids, K)
        for doc in judged:  # the relevant docs, at random ranks
            if doc not in docs:
                docs[rng.randrange(K)] = doc
        docs = list(dict.fromkeys(docs))
        run[qid] = {doc: float(K - i) for i, doc in enumerate(docs)}
    return run


def ours(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    recall, mrr, ndcg = [], [], []
    for qid, scored in run.items():
        ranked = rank_by_score(scored.items())
        recall.append(recall_at_k(ranked, qrels[qid], K))
        mrr.append(mrr_at_k(ranked, qrels[qid], K))
        ndcg.append(ndcg_at_k(ranked, qrels[qid], K))
    return {"recall": macro_average(recall), "mrr": macro_average(mrr), "ndcg": macro_average(ndcg)}


def reference(
    run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"recall.1000", "recip_rank", "ndcg_cut.1000"}
    )
    per_query = evaluator.evaluate(run)
    n = len(per_query)
    return {
        "recall": sum(v["recall_1000"] for v in per_query.values()) / n,
        "mrr": sum(v["recip_rank"] for v in per_query.values()) / n,
        "ndcg": sum(v["ndcg_cut_1000"] for v in per_query.values()) / n,
    }


def harness(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """rq-eval's report for the run as both systems, serialised (what the command writes)."""
    rankings = {qid: rank_by_score(scored.items()) for qid, scored in run.items()}
    systems = [System(label, "run", "bench", "-", rankings) for label in ("A", "B")]
    report = evaluate({qid: "" for qid in qrels}, qrels, systems, K, {})
    report_json(report)
    macro: dict[str, float] = report["systems"]["A"]["metrics"]["macro"]
    return macro


def best_of(fn, *args, repeat: int = 5) -> tuple[float, dict[str, float]]:
    times, result = [], {}
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    doc_ids = [d.doc_id for d in read_corpus(DATA / "corpus.jsonl")]
    run = build_run(qrels, doc_ids)
    print(f"machine: {machine()} | load average {os.getloadavg()[0]:.2f}")
    print(f"run: {len(run)} queries x {K} docs, {sum(map(len, qrels.values()))} judgments")
    t_ours, m_ours = best_of(ours, run, qrels)
    t_ref, m_ref = best_of(reference, run, qrels)
    t_harness, m_harness = best_of(harness, run, qrels)
    for name in m_ours:
        assert abs(m_ours[name] - m_ref[name]) < 1e-9, (name, m_ours[name], m_ref[name])
        assert abs(m_harness[name] - m_ref[name]) < 1e-6, (name, m_harness[name], m_ref[name])
    print(f"{'implementation':<16}{'seconds':>10}{'ratio':>8}  recall@1000 / MRR / nDCG@1000")
    rows = (
        ("verdictflow", t_ours, m_ours),
        ("pytrec_eval", t_ref, m_ref),
        ("rq-eval report", t_harness, m_harness),
    )
    for label, t, m in rows:
        print(
            f"{label:<16}{t:>10.4f}{t / t_ref:>8.2f}  "
            f"{m['recall']:.4f} / {m['mrr']:.4f} / {m['ndcg']:.4f}"
        )


if __name__ == "__main__":
    main()
