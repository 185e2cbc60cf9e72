"""rq-eval systems from configs: the API's retriever in-process, a live /search, traces, mixing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from asgi_lifespan import LifespanManager

from tests.support.processes import run_verdictflow
from tests.support.retrieval_corpus import TEXTS
from verdictflow.rerank_api import ApiSettings, create_app
from verdictflow.scoring_jobs.retrieval_eval.command import rq_eval_command
from verdictflow.scoring_jobs.retrieval_eval.config import load_config
from verdictflow.scoring_jobs.retrieval_eval.inputs import RQInputError, read_corpus
from verdictflow.scoring_jobs.retrieval_eval.systems import (
    build_retriever,
    search_in_process,
    search_url,
)

QUERIES = {"q1": "Which ocean is the largest?", "q2": "How is banana bread made?", "q3": "Kafka"}


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    corpus = "".join(
        json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in TEXTS.items()
    )
    return {
        "dir": tmp_path,
        "corpus": write(tmp_path / "corpus.jsonl", corpus),
        "queries": write(tmp_path / "q.tsv", "".join(f"{q}\t{t}\n" for q, t in QUERIES.items())),
        "truth": write(
            tmp_path / "qrels.tsv", "q1\tocean-c\t2\nq1\tocean-b\t1\nq2\tbread\t1\nq3\tkafka\t1\n"
        ),
        "quality": write(
            tmp_path / "id_quality.jsonl",
            '{"doc_id": "ocean-a", "quality": 0.0}\n{"doc_id": "ocean-b", "quality": 0.0}\n'
            '{"doc_id": "ocean-c", "quality": 1.0}\n',
        ),
        # A: cosine only. B: half quality, from the file (ocean-c is the high-quality one).
        "cosine": write(
            tmp_path / "a.yaml", "weights: {w_cos: 1.0, w_quality: 0.0}\ntrace: true\n"
        ),
        "blended": write(
            tmp_path / "b.yaml",
            "weights: {w_cos: 0.5, w_quality: 0.5}\nquality: id_quality.jsonl\ntrace: false\n",
        ),
        "run": write(tmp_path / "b.run", "q1 Q0 ocean-c 1 2.0 x\nq1 Q0 ocean-b 2 1.0 x\n"),
    }


def evaluate(files: dict[str, Path], out: str, **systems: Any) -> dict[str, Any]:
    path = files["dir"] / f"{out}.json"
    rq_eval_command(
        queries=files["queries"],
        truth=files["truth"],
        out=path,
        corpus=files["corpus"],
        k=2,
        **systems,
    )
    report: dict[str, Any] = json.loads(path.read_text())
    return report


def test_quality_blend_lifts_the_high_quality_document(files: dict[str, Path]) -> None:
    report = evaluate(
        files, "ab", config_a=files["cosine"], config_b=files["blended"], emit_traces=True
    )
    q1 = report["per_query"][0]
    # Cosine ranks ocean-a (unjudged), ocean-b (rel 1): nDCG = (1/log2 3) / (3 + 1/log2 3).
    assert q1["A"] == {"recall": 0.5, "mrr": 0.5, "ndcg": 0.173765, "hits": ["ocean-b"]}
    # Quality 1.0 vs 0.0 at weight 0.5 puts ocean-c (rel 2) first: nDCG = 3 / (3 + 1/log2 3).
    assert q1["B"] == {"recall": 0.5, "mrr": 1.0, "ndcg": 0.826235, "hits": ["ocean-c"]}
    assert report["systems"]["A"]["source"] == report["systems"]["B"]["source"] == "config"
    assert report["systems"]["A"]["config_digest"] != report["systems"]["B"]["config_digest"]
    # The gate: --emit-traces and trace: true (A) writes; trace: false (B) does not.
    a_traces = files["dir"] / "ab.traces.A.jsonl"
    assert report["systems"]["A"]["traces"] == a_traces.name  # next to the report
    assert report["systems"]["B"]["traces"] is None
    assert not (files["dir"] / "ab.traces.B.jsonl").exists()
    rows = [json.loads(line) for line in a_traces.read_text().splitlines()]
    assert [r["qid"] for r in rows] == ["q1", "q2", "q3"]
    first = rows[0]["candidates"]
    assert [(c["rank"], c["doc_id"], c["rel"]) for c in first] == [
        (1, "ocean-a", None),
        (2, "ocean-b", 1),
    ]
    assert all(c["quality"] == 0.5 and c["final_score"] == c["score"] for c in first)


def test_no_traces_without_the_flag(files: dict[str, Path]) -> None:
    report = evaluate(files, "noflag", config_a=files["cosine"], config_b=files["blended"])
    assert report["systems"]["A"]["traces"] is None
    assert list(files["dir"].glob("noflag.traces.*")) == []


def test_a_config_faces_a_run_file(files: dict[str, Path]) -> None:
    report = evaluate(files, "mixed", config_a=files["cosine"], run_b=files["run"])
    assert report["systems"]["B"]["source"] == "run"
    assert report["per_query"][0]["B"]["mrr"] == 1.0
    assert report["per_query"][1]["B"]["recall"] == 0.0  # q2 not in the run: empty ranking


@pytest.mark.parametrize(
    ("systems", "message"),
    [
        ({"config_a": "cosine", "run_a": "run", "run_b": "run"}, "exactly one of --runA"),
        ({"run_b": "run"}, "exactly one of --runA"),
    ],
)
def test_each_side_needs_exactly_one_source(
    files: dict[str, Path], systems: dict[str, str], message: str
) -> None:
    with pytest.raises(RQInputError, match=message):
        evaluate(files, "x", **{key: files[name] for key, name in systems.items()})


def test_in_process_config_needs_the_corpus(files: dict[str, Path]) -> None:
    with pytest.raises(RQInputError, match="needs --corpus"):
        rq_eval_command(
            queries=files["queries"],
            truth=files["truth"],
            out=files["dir"] / "x.json",
            config_a=files["cosine"],
            run_b=files["run"],
        )


async def test_url_config_ranks_like_the_in_process_retriever(files: dict[str, Path]) -> None:
    """The same corpus and quality behind a real /search app give the same rankings and scores."""
    npz = files["dir"] / "v.npz"
    docs = read_corpus(files["corpus"])
    np.savez(
        npz,
        doc_ids=np.array([d.doc_id for d in docs]),
        concept_texts=np.array([d.text for d in docs]),
    )
    blended = load_config(files["blended"])
    expected = search_in_process(
        blended, build_retriever(blended, docs), QUERIES, sorted(QUERIES), 3
    )
    url_config = write(
        files["dir"] / "url.yaml",
        "url: http://search.test\nweights: {w_cos: 0.5, w_quality: 0.5}\n",
    )
    settings = ApiSettings(source="artifacts", npz=npz, quality=files["quality"])
    async with LifespanManager(create_app(settings)) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        seen = await search_url(
            load_config(url_config), QUERIES, sorted(QUERIES), 3, transport=transport
        )
        # Past the server's top_k limit: the server's 422 is one clear error, not a crash.
        with pytest.raises(RQInputError, match="answered 422 for query q1"):
            await search_url(load_config(url_config), QUERIES, ["q1"], 500, transport=transport)
    assert seen == expected
    assert seen["q1"][0]["doc_id"] == "ocean-c"


def test_config_runs_are_byte_identical_and_bad_yaml_exits_2(files: dict[str, Path]) -> None:
    tmp = files["dir"]
    outputs = []
    for name in ("one", "two"):
        out = tmp / name
        out.mkdir()
        result = run_verdictflow(
            "rq-eval",
            *("--corpus", files["corpus"], "--queries", files["queries"]),
            *("--truth", files["truth"], "--configA", files["cosine"], "--runB", files["run"]),
            *("--k", 3, "--out", out / "rq.json", "--csv", out / "rq.csv"),
            "--emit-traces",
            timeout=90,
        )
        assert result.returncode == 0, result.stderr
        assert "B: no traces" in result.stderr
        outputs.append(
            [(out / f"rq{ext}").read_bytes() for ext in (".json", ".csv", ".traces.A.jsonl")]
        )
    assert outputs[0] == outputs[1]
    bad = write(tmp / "bad.yaml", "mode: dense\nweights: {w_cos: 1\n")
    result = run_verdictflow(
        "rq-eval",
        *("--corpus", files["corpus"], "--queries", files["queries"], "--truth", files["truth"]),
        *("--configA", bad, "--runB", files["run"], "--out", tmp / "bad.json"),
        timeout=90,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "bad YAML" in lines[0]
    assert not (tmp / "bad.json").exists()
