"""score-quality inputs and errors, the table-entry transitions, and CPESH over local HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import faiss
import numpy as np
import orjson
import pytest

from tests.support.processes import run_verdictflow
from verdictflow.agents import doc_quality_state as state
from verdictflow.cpesh_client import CpeshClient, cpesh_margins
from verdictflow.evaluators.doc_quality import QualityConfig, cpesh_margin
from verdictflow.evaluators.embedding import embed_texts
from verdictflow.models.events import DocUpdate
from verdictflow.settings import CpeshSettings

REPLY = {
    "probe": "Which ocean is largest?",
    "expected": "The Pacific Ocean is the largest ocean",
    "soft_negative": "The Atlantic Ocean is the largest ocean",
    "hard_negative": "Lake Superior is a big freshwater lake",
}


def expected_margin() -> float:
    v = embed_texts([REPLY["expected"], REPLY["soft_negative"], REPLY["hard_negative"]])
    v = v.astype(np.float64)
    return cpesh_margin(float(v[0] @ v[1]), float(v[0] @ v[2]))


@pytest.fixture
def llm_server():
    """A small server speaking Ollama's /api/generate; texts containing 'garbage' get a reply
    without answers, so that path is exercised too."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            reply = {"probe": "?"} if "garbage" in body["prompt"] else REPLY
            data = json.dumps({"model": body["model"], "response": json.dumps(reply)}).encode()
            self.send_response(200 if self.path == "/api/generate" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_cpesh_margin_from_local_llm(llm_server):
    url, seen = llm_server
    settings = CpeshSettings(llm_endpoint=url, llm_model="tiny", llm_retries=1)
    results = asyncio.run(cpesh_margins(["The Pacific Ocean.", "garbage", ""], settings))
    margin, reason = results[0]
    assert reason is None
    assert margin == pytest.approx(expected_margin(), abs=1e-12)
    assert 0.0 < margin < 1.0
    assert results[1][0] is None
    assert results[1][1].startswith("cpesh_unavailable: ValueError")
    assert results[2] == (None, "cpesh_unavailable: empty text")
    assert seen[0]["model"] == "tiny"
    assert seen[0]["stream"] is False
    assert seen[0]["options"] == {"temperature": 0, "seed": 0}
    assert len(seen) == 3  # the bad reply was retried once; the empty text never sent


def test_cpesh_defers_when_the_endpoint_is_down():
    settings = CpeshSettings(
        llm_endpoint="http://127.0.0.1:9", llm_retries=0, llm_timeout_seconds=2
    )

    async def run():
        async with CpeshClient(settings) as client:
            return await client.margin("text")

    margin, reason = asyncio.run(run())
    assert margin is None
    assert reason.startswith("cpesh_unavailable: ConnectError")


def test_score_quality_with_cpesh_records_margin_and_reasons(llm_server, tmp_path):
    url, _ = llm_server
    npz = tmp_path / "c.npz"
    texts = ["The Pacific Ocean is the largest ocean on Earth, by far the deepest too.", "garbage"]
    np.savez(npz, vectors=np.eye(2, 8, dtype=np.float32), doc_ids=np.array(["p", "g"]),
             concept_texts=np.array(texts))  # fmt: skip
    out = tmp_path / "q.jsonl"
    env = {"LNSP_LLM_ENDPOINT": url, "LNSP_LLM_RETRIES": "0", "PATH": "/usr/bin:/bin"}
    proc = run_verdictflow("score-quality", "--npz", npz, "--index", tmp_path / "x",
                           "--edges", tmp_path / "e", "--out-jsonl", out,
                           "--out-npz", tmp_path / "q.npz", "--use-cpesh", env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    p, g = map(orjson.loads, out.read_bytes().splitlines())
    assert p["features"]["cpesh_margin"] == pytest.approx(expected_margin(), abs=1e-12)
    health = 0.7 + 0.3 * 57 / 72  # 72 characters, 57 of them letters
    assert p["features"]["text"] == pytest.approx(health, abs=1e-15)
    assert p["quality"] == pytest.approx(0.4 * health + 0.2 + 0.1 * expected_margin(), abs=1e-12)
    assert g["features"]["cpesh_margin"] is None
    assert g["reasons"][0].startswith("cpesh_unavailable")
    assert "deferred for 1 of 2" in proc.stderr


def _npz(tmp_path, **arrays):
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)
    return path


def _score(tmp_path, npz, *extra):
    outs = ["--out-jsonl", tmp_path / "o.jsonl", "--out-npz", tmp_path / "o.npz"]
    return run_verdictflow("score-quality", "--npz", npz, *outs, "--edges", tmp_path / "no", *extra)


def test_score_quality_errors_are_one_clear_line(tmp_path):
    ids, texts = np.array(["a", "b"]), np.array(["x", "y"])
    vecs = np.ones((2, 4), dtype=np.float32)
    proc = _score(tmp_path, _npz(tmp_path, vectors=vecs, doc_ids=ids))
    assert proc.returncode == 2
    assert "missing array(s) concept_texts" in proc.stderr
    nan = vecs.copy()
    nan[1, 2] = np.nan
    proc = _score(tmp_path, _npz(tmp_path, vectors=nan, doc_ids=ids, concept_texts=texts))
    assert proc.returncode == 2
    assert "NaN/inf values, first at row 1" in proc.stderr
    index = faiss.IndexFlatIP(8)
    index.add(np.ones((2, 8), dtype=np.float32))
    faiss.write_index(index, str(tmp_path / "i.index"))
    good = _npz(tmp_path, vectors=vecs, doc_ids=ids, concept_texts=texts)
    proc = _score(tmp_path, good, "--index", tmp_path / "i.index")
    assert proc.returncode == 2
    assert "index dimension 8, NPZ vectors have 4" in proc.stderr
    proc = _score(tmp_path, good, "--index", tmp_path / "missing.index")
    assert proc.returncode == 0, proc.stderr
    assert "building an exact inner-product index in memory" in proc.stderr
    assert "graph degree is 0" in proc.stderr


def test_score_quality_uses_a_given_index_and_edges(tmp_path):
    vecs = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32)
    npz = _npz(tmp_path, vectors=vecs, doc_ids=np.array(["a", "b", "c"]),
               concept_texts=np.array(["a" * 100, "b" * 100, "c" * 100]))  # fmt: skip
    index = faiss.IndexFlatIP(4)
    index.add(vecs)
    faiss.write_index(index, str(tmp_path / "i.index"))
    edges = tmp_path / "edges.jsonl"
    edges.write_text('{"src": "a", "dst": "c", "w": 1}\n{"src": "a", "dst": "c"}\n'
                     '{"src": "c", "dst": "a"}\n{"src": "b", "dst": "b"}\n\n')  # fmt: skip
    outs = ["--out-jsonl", tmp_path / "o.jsonl", "--out-npz", tmp_path / "o.npz"]
    args = ["--npz", npz, "--index", tmp_path / "i.index", "--edges", edges, *outs]
    proc = run_verdictflow(*args, module="verdictflow.scoring_jobs.batch.score_quality")
    assert proc.returncode == 0, proc.stderr
    rows = {
        r["doc_id"]: r for r in map(orjson.loads, (tmp_path / "o.jsonl").read_bytes().splitlines())
    }
    # a: 2 distinct edges (a->c, c->a), 1 duplicate (b); b: self-loop ignored, 1 duplicate
    assert rows["a"]["features"] == {
        "text": 1.0,
        "graph": 2 / 7,
        "dup_penalty": 1 / 3,
        "cpesh_margin": 0.0,
    }
    assert rows["a"]["quality"] == pytest.approx(0.4 + 0.3 * 2 / 7 + 0.2 * 2 / 3, abs=1e-15)
    assert rows["b"]["features"]["graph"] == 0.0
    assert rows["c"]["features"]["dup_penalty"] == 0.0
    z = np.load(tmp_path / "o.npz")
    assert z["doc_ids"].tolist() == ["a", "b", "c"]
    assert z["quality"][0] == rows["a"]["quality"]


def test_entry_transitions_are_idempotent():
    cfg = QualityConfig()
    entry = state.new_entry()
    up = DocUpdate(doc_id="d", text="a" * 100, version=3)
    entry, old = state.apply_doc(entry, up, 0.0, None)
    assert old == []
    entry = state.set_dups(entry, 1, ["e"])
    row = state.take_row(entry, "d", cfg, 5.0)
    assert (row.version, row.doc_version, row.features.dup_penalty) == (1, 3, 1 / 3)
    again, _ = state.apply_doc(entry, up, 0.0, None)
    assert state.take_row(state.set_dups(again, 1, ["e"]), "d", cfg, 6.0) is None
    for _ in range(2):  # the same add twice counts once
        entry = state.apply_edge(entry, "o:x", "add")
    assert state.take_row(entry, "d", cfg, 7.0).features.graph == 1 / 6
    entry = state.apply_edge(entry, "i:y", "remove")  # never added: no change
    assert state.take_row(entry, "d", cfg, 8.0) is None
    entry, old = state.apply_doc(entry, DocUpdate(doc_id="d", op="delete"), None, None)
    assert old == ["e"]
    gone = state.take_row(entry, "d", cfg, 9.0)
    assert (gone.deleted, gone.quality, gone.version) == (True, 0.0, 3)
    assert state.take_row(entry, "d", cfg, 9.0) is None
    assert entry["edges"] == ["o:x"]  # the graph outlives the document
    assert state.edge_messages("a", "a", "add") == []
    assert [k for k, _ in state.edge_messages("a", "b", "add")] == ["a", "b"]


def test_vector_problems():
    assert state.vector_problem(DocUpdate(doc_id="d", vector=[1.0] * 4), 4) is None
    assert "dimensions" in state.vector_problem(DocUpdate(doc_id="d", vector=[1.0] * 3), 4)
    assert "NaN" in state.vector_problem(DocUpdate(doc_id="d", vector=[float("inf")] * 4), 4)


def test_score_quality_takes_its_weights_from_the_policy_and_flags_override(tmp_path):
    texts = ["The Pacific Ocean is the largest ocean on Earth, by far the deepest too.", "x" * 30]
    npz = _npz(tmp_path, vectors=np.eye(2, 8, dtype=np.float32), doc_ids=np.array(["p", "x"]),
               concept_texts=np.array(texts))  # fmt: skip
    policy = tmp_path / "policy.yaml"
    policy.write_text("doc_quality:\n  w_text: 1.0\n  w_graph: 0.0\n  w_dup: 0.0\n  w_cpesh: 0\n")

    def rows(*extra):
        proc = _score(tmp_path, npz, "--index", tmp_path / "none", *extra)
        assert proc.returncode == 0, proc.stderr
        return [orjson.loads(r) for r in (tmp_path / "o.jsonl").read_bytes().splitlines()]

    spec, from_policy = rows(), rows("--policy", policy)
    assert [r["quality"] for r in from_policy] == [r["features"]["text"] for r in from_policy]
    assert spec[0]["quality"] != from_policy[0]["quality"]
    overridden = rows("--policy", policy, "--w_dup", "0.25")
    assert overridden[1]["quality"] == pytest.approx(from_policy[1]["quality"] + 0.25)
