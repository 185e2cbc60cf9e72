"""Checks of the document-quality stream against ``score-quality`` (the batch job) on the
corpus a replay leaves behind: used by the stream test and the rebalance test."""

from __future__ import annotations

import asyncio
import time

import orjson

from tests.support.processes import run_verdictflow
from verdictflow.samples.doc_corpus import DocTraffic
from verdictflow.scoring_jobs.batch.export_quality import latest_rows, read_quality_rows


def batch_scores(traffic: DocTraffic, tmp_path, embedder=None) -> dict[str, dict]:
    npz, edges = tmp_path / "corpus.npz", tmp_path / "edges.jsonl"
    traffic.write_batch_inputs(npz, edges, embedder=embedder)
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


def stream_until_agrees(settings, batch, worker, timeout=300.0) -> dict[str, dict]:
    """The exported stream rows, read until they agree with ``batch`` (or the timeout), then
    read once more after an idle period to catch late changes. ``worker`` is a worker whose
    death fails the wait, or a callable that says whether the workers are alive."""
    deadline = time.monotonic() + timeout
    while True:
        rows = latest_rows(asyncio.run(read_quality_rows(settings, idle_seconds=1.5)))
        stream = {r.doc_id: orjson.loads(r.model_dump_json()) for r in rows}
        if callable(worker):
            assert worker(), "a worker died"
        else:
            assert worker.proc.poll() is None, worker.log()[-3000:]
        if not differences(stream, batch) or time.monotonic() > deadline:
            break
    rows = latest_rows(asyncio.run(read_quality_rows(settings, idle_seconds=3)))
    return {r.doc_id: orjson.loads(r.model_dump_json()) for r in rows}
