"""rq-eval: input formats, metric values, deterministic output, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT, SHARED_DATA
from verdictflow.scoring_jobs.retrieval_eval.inputs import (
    RQInputError,
    read_corpus,
    read_qrels,
    read_queries,
)

TREC = SHARED_DATA / "trec_eval_tests" / "test"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def inputs(tmp_path):
    queries = write(tmp_path / "q.tsv", "q1\tapple tart\nq2\tbanana bread\nq3\tno judgments\n")
    truth = write(tmp_path / "qrels.tsv", "q1\td1\t2\nq1\td3\t1\nq2\td2\t1\n")
    run_a = write(tmp_path / "a.run", "q1 Q0 d1 1 3.0 A\nq1 Q0 d3 2 2.0 A\nq2 Q0 d9 1 1.0 A\n")
    run_b = write(
        tmp_path / "b.run",
        "q1 Q0 d3 1 3.0 B\nq1 Q0 d1 2 3.0 B\nq2 Q0 d2 1 5.0 B\nq2 Q0 d9 2 1.0 B\n",
    )
    return tmp_path, queries, truth, run_a, run_b


def rq_eval(*args: object):
    """``python scripts/rq_eval.py ARGS``, the spelling of spec 001."""
    script = ROOT / "scripts" / "rq_eval.py"
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)], capture_output=True, text=True, timeout=60
    )


def rq_eval_pair(inputs, out_name: str, *extra: object):
    """rq-eval of the fixture's runs A and B, JSON and CSV written as ``out_name``.*."""
    tmp, queries, truth, run_a, run_b = inputs
    return rq_eval(
        "--queries",
        queries,
        "--truth",
        truth,
        "--runA",
        run_a,
        "--runB",
        run_b,
        *extra,
        "--out",
        tmp / f"{out_name}.json",
        "--csv",
        tmp / f"{out_name}.csv",
    )


def test_report_values_delta_and_ties(inputs):
    tmp = inputs[0]
    result = rq_eval_pair(inputs, "out", "--k", 2)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp / "out.json").read_text())
    assert list(report) == [
        "schema_version",
        "k",
        "corpus_digest",
        "queries_digest",
        "qrels_digest",
        "queries_evaluated",
        "queries_without_judgments",
        "systems",
        "delta",
        "per_query",
    ]
    assert (report["queries_evaluated"], report["queries_without_judgments"]) == (2, 1)
    q1, q2 = report["per_query"]
    assert q1["A"] == {"recall": 1.0, "mrr": 1.0, "ndcg": 1.0, "hits": ["d1", "d3"]}
    # B ties d1 and d3 at 3.0: lex(id) puts d1 first, so B's q1 ranking is ideal too.
    assert q1["B"]["hits"] == ["d1", "d3"]
    assert q2["A"] == {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0, "hits": []}
    assert q2["B"]["mrr"] == 1.0
    assert report["delta"]["macro"] == {"recall": 0.5, "mrr": 0.5, "ndcg": 0.5}
    assert report["systems"]["A"]["metrics"]["macro"]["recall"] == 0.5
    csv_lines = (tmp / "out.csv").read_text().splitlines()
    assert csv_lines[0] == "qid,system,recall,mrr,ndcg,hits"
    assert csv_lines[1] == "q1,A,1.0,1.0,1.0,d1 d3"
    assert len(csv_lines) == 5


def test_two_runs_give_identical_bytes(inputs):
    tmp = inputs[0]
    outputs = []
    for name in ("one", "two"):
        rq_eval_pair(inputs, name)
        outputs.append(((tmp / f"{name}.json").read_bytes(), (tmp / f"{name}.csv").read_bytes()))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    ("truth_text", "run_text", "message"),
    [
        ("q1\td1\t1\nq9\td1\t1\n", "q1 Q0 d1 1 1.0 A\n", "not in --queries"),
        ("q1\td1\t1\nq1\td1\t0\n", "q1 Q0 d1 1 1.0 A\n", "duplicate judgment"),
        ("q1\td1\thigh\n", "q1 Q0 d1 1 1.0 A\n", "not an integer"),
        ("q1\td1\t1\n", "q1 Q0 d1 1\n", "expected 'qid Q0 doc rank score tag'"),
        ("q1\td1\t1\n", "q7 Q0 d1 1 1.0 A\n", "in run A are not in --queries"),
        ("q1\td1\t1\n", "q1 Q0 d9 1 0.9 A\nq1 Q0 d1 2 nan A\n", "r.run:2: score 'nan'"),
        ("q1\td1\t1\n", "q1 Q0 d1 1 inf A\n", "not a finite number"),
        ("q1\td1\tnan\n", "q1 Q0 d1 1 1.0 A\n", "not an integer"),
    ],
)
def test_inconsistent_inputs_exit_non_zero_with_one_line(tmp_path, truth_text, run_text, message):
    queries = write(tmp_path / "q.tsv", "q1\tquery\n")
    truth = write(tmp_path / "t.tsv", truth_text)
    run = write(tmp_path / "r.run", run_text)
    result = rq_eval(
        "--queries",
        queries,
        "--truth",
        truth,
        "--runA",
        run,
        "--runB",
        run,
        "--out",
        tmp_path / "o.json",
    )
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "o.json").exists()


def test_input_formats_are_recognised_from_content(tmp_path):
    assert read_queries(write(tmp_path / "q.jsonl", '{"_id": "1", "text": "a"}\n')) == {"1": "a"}
    beir = write(tmp_path / "b.tsv", "query-id\tcorpus-id\tscore\n1\td1\t1\n")
    trec = write(tmp_path / "t.txt", "1 0 d1 1\n")
    spec = write(tmp_path / "s.tsv", "1\td1\t1\n")
    assert read_qrels(beir) == read_qrels(trec) == read_qrels(spec) == {"1": {"d1": 1}}
    corpus = write(
        tmp_path / "c.jsonl",
        '{"_id": "d1", "title": "T", "text": "x"}\n{"id": "d2", "text": "y"}\n',
    )
    assert [(d.doc_id, d.text) for d in read_corpus(corpus)] == [("d1", "T\nx"), ("d2", "y")]
    with pytest.raises(RQInputError, match="duplicate query id"):
        read_queries(write(tmp_path / "d.tsv", "1\ta\n1\tb\n"))


@pytest.mark.skipif(not TREC.is_dir(), reason="../shared/data not present")
def test_macro_figures_equal_trec_eval_at_10(tmp_path):
    queries = write(tmp_path / "q.tsv", "301\ta\n302\tb\n303\tc\n")
    out = tmp_path / "o.json"
    result = rq_eval(
        "--queries",
        queries,
        "--truth",
        TREC / "qrels.test",
        "--runA",
        TREC / "results.test",
        "--runB",
        TREC / "results.test",
        "--out",
        out,
    )
    assert result.returncode == 0, result.stderr
    macro = json.loads(out.read_text())["systems"]["A"]["metrics"]["macro"]
    assert (f"{macro['recall']:.4f}", f"{macro['ndcg']:.4f}") == ("0.0317", "0.3016")


def test_an_output_under_a_missing_directory_fails_before_any_work(inputs):
    tmp, queries, truth, run_a, run_b = inputs
    common = ["--queries", queries, "--truth", truth, "--runA", run_a, "--runB", run_b]
    missing = rq_eval(*common, "--out", tmp / "nowhere" / "o.json")
    assert missing.returncode == 2
    assert "no such directory" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    csv = rq_eval(*common, "--out", tmp / "o.json", "--csv", tmp / "nowhere" / "x.csv")
    assert csv.returncode == 2
    assert not (tmp / "o.json").exists(), "the report must not be written when the CSV cannot"


@pytest.mark.parametrize(
    ("queries_text", "corpus_text", "message"),
    [("q1\t   \n", None, "has no text"), ("q1\tapple\n", "", "no documents")],
)
def test_blank_queries_and_an_empty_corpus_are_errors(tmp_path, queries_text, corpus_text, message):
    queries = write(tmp_path / "q.tsv", queries_text)
    truth = write(tmp_path / "t.tsv", "q1\td1\t1\n")
    config = write(tmp_path / "c.yaml", "mode: lexical\n")
    extra = []
    if corpus_text is not None:
        extra = ["--corpus", write(tmp_path / "corpus.jsonl", corpus_text)]
    result = rq_eval(
        "--queries", queries, "--truth", truth, "--configA", config, "--configB", config,
        *extra, "--out", tmp_path / "o.json",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
