"""Retrieval metrics: hand-computed cases, trec_eval's own fixtures, pytrec_eval and ranx."""

from __future__ import annotations

import math
from functools import partial

import pytest

from tests.support.paths import SHARED_DATA
from verdictflow.evaluators.retrieval_metrics import (
    macro_average,
    mrr_at_k,
    ndcg_at_k,
    parse_metric,
    rank_by_score,
    recall_at_k,
)
from verdictflow.scoring_jobs.retrieval_eval.trec_io import (
    TrecFormatError,
    read_trec_qrels,
    read_trec_run,
)

TREC = SHARED_DATA / "trec_eval_tests"
needs_fixtures = pytest.mark.skipif(not TREC.is_dir(), reason="../shared/data not present")

JUDGED = {"d1": 2, "d2": 0, "d3": 1, "d4": 1}


def test_recall_and_mrr_by_hand():
    ranked = ["d2", "d3", "d9", "d1"]
    assert recall_at_k(ranked, JUDGED, 2) == 1 / 3
    assert recall_at_k(ranked, JUDGED, 4) == 2 / 3
    assert mrr_at_k(ranked, JUDGED, 1) == 0.0
    assert mrr_at_k(ranked, JUDGED, 4) == 0.5
    assert recall_at_k(ranked, {"d2": 0}, 4) == 0.0  # nothing relevant


def test_ndcg_by_hand_with_exponential_gain():
    ranked = ["d3", "d1", "d2"]
    dcg = 1 / math.log2(2) + 3 / math.log2(3)
    idcg = 3 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)  # ideal: d1, d3, d4
    assert ndcg_at_k(ranked, JUDGED, 3) == pytest.approx(dcg / idcg, abs=1e-15)
    assert ndcg_at_k(["d1", "d3", "d4"], JUDGED, 3) == 1.0
    assert ndcg_at_k(ranked, {"d1": 0}, 3) == 0.0


def test_ideal_ranking_breaks_gain_ties_by_lex_id():
    # d3 and d4 tie on gain; at k=2 the ideal list is d1, d3 (lex), so d1, d4 is also ideal.
    assert ndcg_at_k(["d1", "d4"], JUDGED, 2) == 1.0


def test_rank_by_score_ties_by_lex_id_and_keeps_best_duplicate():
    assert rank_by_score([("b", 1.0), ("a", 1.0), ("c", 2.0), ("a", 0.5)]) == ["c", "a", "b"]


def test_metric_ids_parse():
    assert parse_metric("ndcg@10") == (ndcg_at_k, 10)
    with pytest.raises(ValueError, match="unknown metric"):
        parse_metric("map@10")
    with pytest.raises(ValueError, match="unknown metric"):
        parse_metric("recall@0")


def test_trec_readers_refuse_bad_lines(tmp_path):
    qrels = tmp_path / "q"
    qrels.write_text("1 0 d1 1\n1 0 d1 0\n")
    with pytest.raises(TrecFormatError, match="duplicate judgment"):
        read_trec_qrels(qrels)
    run = tmp_path / "r"
    run.write_text("1 Q0 d1 1 high tag\n")
    with pytest.raises(TrecFormatError, match="not a number"):
        read_trec_run(run)


def trec_eval_order(scored: list[tuple[str, float]]) -> list[str]:
    """trec_eval's own ranking: score descending, ties by docno descending."""
    return [d for d, _ in sorted(scored, key=lambda x: (x[1], x[0]), reverse=True)]


def expected_trec_eval(name: str) -> dict[tuple[str, str], str]:
    rows = {}
    for line in (TREC / "expected_v9.0.8" / name).read_text().splitlines():
        measure, qid, value = line.split()
        rows[(measure, qid)] = value
    return rows


@needs_fixtures
def test_equal_to_trec_eval_per_query_and_averaged():
    qrels = read_trec_qrels(TREC / "test" / "qrels.test")
    run = read_trec_run(TREC / "test" / "results.test")
    expected = expected_trec_eval("out.test.aq")
    measures = {
        "recip_rank": lambda r, j: mrr_at_k(r, j, len(r)),
        "ndcg_cut_10": lambda r, j: ndcg_at_k(r, j, 10),
        "ndcg": lambda r, j: ndcg_at_k(r, j, len(r)),
        **{
            f"recall_{k}": partial(recall_at_k, k=k)
            for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)
        },
    }
    checked = 0
    for measure, fn in measures.items():
        per_query = {qid: fn(trec_eval_order(run[qid]), qrels[qid]) for qid in sorted(run)}
        for qid, value in per_query.items():
            assert f"{value:.4f}" == expected[(measure, qid)], (measure, qid)
            checked += 1
        assert f"{macro_average(list(per_query.values())):.4f}" == expected[(measure, "all")]
    assert checked == len(measures) * 3


@needs_fixtures
def test_graded_ndcg_equals_pytrec_eval_with_exponential_gains():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = read_trec_qrels(TREC / "test" / "qrels.rel_level")
    run = read_trec_run(TREC / "test" / "results.test")
    assert any(rel > 1 for judged in qrels.values() for rel in judged.values())  # really graded
    # trec_eval's nDCG gain is the judgment itself: judging 2^rel - 1 gives exponential gain.
    exp_qrels = {q: {d: (2**r - 1 if r > 0 else 0) for d, r in j.items()} for q, j in qrels.items()}
    run_scores = {q: dict(pairs) for q, pairs in run.items()}
    ours_exp = pytrec_eval.RelevanceEvaluator(exp_qrels, {"ndcg_cut.10", "ndcg_cut.100"})
    ours_lin = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "recall.10", "recall.100"})
    exp_results, lin_results = ours_exp.evaluate(run_scores), ours_lin.evaluate(run_scores)
    for qid, pairs in run.items():
        ranked = trec_eval_order(pairs)
        judged = qrels[qid]
        assert ndcg_at_k(ranked, judged, 10) == pytest.approx(
            exp_results[qid]["ndcg_cut_10"], abs=1e-12
        )
        assert ndcg_at_k(ranked, judged, 100) == pytest.approx(
            exp_results[qid]["ndcg_cut_100"], abs=1e-12
        )
        assert mrr_at_k(ranked, judged, len(ranked)) == pytest.approx(
            lin_results[qid]["recip_rank"], abs=1e-12
        )
        assert recall_at_k(ranked, judged, 10) == pytest.approx(
            lin_results[qid]["recall_10"], abs=1e-12
        )


@needs_fixtures
def test_graded_ndcg_equals_ranx_ndcg_burges_on_a_run_without_ties():
    """ranx's ``ndcg_burges`` is the spec's variant (gain 2^rel - 1, log2(i + 1)) by name."""
    ranx = pytest.importorskip("ranx")
    qrels = read_trec_qrels(TREC / "test" / "qrels.rel_level")
    run = read_trec_run(TREC / "test" / "results.test")
    assert any(rel > 1 for judged in qrels.values() for rel in judged.values())  # really graded
    # Distinct scores in our order: no tie for any implementation to break its own way.
    ranked = {qid: rank_by_score(pairs) for qid, pairs in run.items()}
    untied = {
        qid: {d: float(len(docs) - i) for i, d in enumerate(docs)} for qid, docs in ranked.items()
    }
    theirs = ranx.evaluate(
        ranx.Qrels(qrels),
        ranx.Run(untied),
        ["ndcg_burges@10", "ndcg_burges@100"],  # interpreted: tests/conftest.py
        return_mean=False,
    )
    qids = sorted(untied)  # ranx orders queries by id
    for metric, ours in (
        ("ndcg_burges@10", partial(ndcg_at_k, k=10)),
        ("ndcg_burges@100", partial(ndcg_at_k, k=100)),
    ):
        values = [ours(ranked[qid], qrels[qid]) for qid in qids]
        assert values == pytest.approx(list(theirs[metric]), abs=1e-12), metric
    assert any(0 < ndcg_at_k(ranked[q], qrels[q], 10) < 1 for q in qids)  # not trivially 0 or 1
