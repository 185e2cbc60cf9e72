"""Document quality on the stream agrees with the batch tool, through the real broker.

A corpus with duplicates (exact texts, near-identical vectors), updates, deletes, repeated
and removed edges is replayed to a real worker; the live ``doc-quality`` topic is exported and
compared with ``score-quality`` on the corpus those events leave behind: equal to 1e-9 for
every document. A second replay delivers every document and edge twice (at-least-once) and
must give the same degrees, hence the same scores.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
import orjson
import pytest

from tests.conftest import run_verdictflow
from verdictflow.evaluators.doc_quality import graph_degree
from verdictflow.samples.doc_corpus import DocTraffic, generate
from verdictflow.scoring_jobs.export_quality import latest_rows, read_quality_rows
from verdictflow.scoring_jobs.replay import replay
from verdictflow.scoring_jobs.score_quality import degrees_of

pytestmark = pytest.mark.broker


def batch_scores(traffic: DocTraffic, tmp_path) -> dict[str, dict]:
    npz, edges = tmp_path / "corpus.npz", tmp_path / "edges.jsonl"
    traffic.write_batch_inputs(npz, edges)
    out = tmp_path / "batch.jsonl"
    args = ["--npz", npz, "--index", tmp_path / "none.index", "--edges", edges]
    proc = run_verdictflow("score-quality", *args, "--out-jsonl", out, "--out-npz", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    return {r["doc_id"]: r for r in map(orjson.loads, out.read_bytes().splitlines())}


def differences(stream: dict[str, dict], batch: dict[str, dict]) -> list[str]:
    out = [f"missing or extra: {sorted(stream.keys() ^ batch.keys())[:5]}"]
    if stream.keys() != batch.keys():
        return out
    for doc_id, b in batch.items():
        s = stream[doc_id]
        pairs = [(s["quality"], b["quality"])] + [
            (s["features"][k], b["features"][k]) for k in ("text", "graph", "dup_penalty")
        ]
        if any(abs(x - y) > 1e-9 for x, y in pairs):
            out.append(f"{doc_id}: stream {s} != batch {b}")
    return out[1:]


def stream_until_agrees(settings, batch, worker, timeout=150.0) -> dict[str, dict]:
    """The exported stream rows, read until they agree with ``batch`` (or the timeout), then
    read once more after an idle period to catch late changes."""
    deadline = time.monotonic() + timeout
    while True:
        rows = latest_rows(asyncio.run(read_quality_rows(settings, idle_seconds=1.5)))
        stream = {r.doc_id: orjson.loads(r.model_dump_json()) for r in rows}
        assert worker.proc.poll() is None, worker.log()[-3000:]
        if not differences(stream, batch) or time.monotonic() > deadline:
            break
    rows = latest_rows(asyncio.run(read_quality_rows(settings, idle_seconds=3)))
    return {r.doc_id: orjson.loads(r.model_dump_json()) for r in rows}


@pytest.mark.parametrize("deliveries", [1, 2], ids=["once", "twice"])
def test_stream_quality_equals_batch(settings_factory, worker_factory, tmp_path, deliveries):
    traffic = generate(240, seed=7)
    batch = batch_scores(traffic, tmp_path)
    dups = [b["features"]["dup_penalty"] for b in batch.values()]
    assert sum(d > 0 for d in dups) >= 20  # duplicates planted
    assert {1 / 3, 1.0} <= set(dups)
    settings = settings_factory()
    worker = worker_factory(settings)
    for _ in range(deliveries):
        asyncio.run(replay(traffic.doc_lines, "docs", settings))
        asyncio.run(replay(traffic.edge_lines, "doc-edges", settings))
    stream = stream_until_agrees(settings, batch, worker)
    problems = differences(stream, batch)
    assert not problems, "\n".join(problems[:10]) + "\n" + worker.log()[-2000:]
    degrees = degrees_of(traffic.final_edges)
    for doc_id, row in stream.items():
        assert row["features"]["graph"] == graph_degree(degrees.get(doc_id, 0))
    assert len(stream) == len(traffic.final_docs)


def test_export_quality_writes_the_batch_files(settings_factory, worker_factory, tmp_path):
    traffic = DocTraffic()
    traffic.doc("a", "A document about the Pacific Ocean, the largest ocean on Earth today.")
    traffic.doc("b", "A document about the Pacific Ocean, the largest ocean on Earth today.")
    traffic.doc("c", "Short")
    traffic.delete("c")
    traffic.edge("a", "b")
    settings = settings_factory()
    worker = worker_factory(settings)
    asyncio.run(replay(traffic.doc_lines, "docs", settings))
    asyncio.run(replay(traffic.edge_lines, "doc-edges", settings))
    batch = batch_scores(traffic, tmp_path)
    stream_until_agrees(settings, batch, worker)
    out = tmp_path / "export.jsonl"
    env_args = ["--broker", settings.broker, "--prefix", settings.topic_prefix, "--idle", "2"]
    proc = run_verdictflow(
        "export-quality", *env_args, "--out-jsonl", out, "--out-npz", tmp_path / "e.npz"
    )
    assert proc.returncode == 0, proc.stderr
    lines = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert [x["doc_id"] for x in lines] == ["a", "b"]
    assert lines[0]["features"] == {"text": 1.0 * lines[0]["features"]["text"], "graph": 1 / 6,
                                    "dup_penalty": 1 / 3, "cpesh_margin": 0.0}  # fmt: skip
    z = np.load(tmp_path / "e.npz")
    assert z["doc_ids"].tolist() == ["a", "b"]
    assert z["quality"].tolist() == [x["quality"] for x in lines]
