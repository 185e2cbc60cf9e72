"""Document quality on the stream agrees with the batch tool, through the real broker.

A corpus with duplicates (exact texts, near-identical vectors), updates, deletes, repeated
and removed edges is replayed to a real worker; the live ``doc-quality`` topic is exported and
compared with ``score-quality`` on the corpus those events leave behind: equal to 1e-9 for
every document. The replay delivers every document and edge twice (at-least-once), which must
give the same degrees, hence the same scores, as a single delivery would.
"""

from __future__ import annotations

import asyncio

import numpy as np
import orjson
import pytest

from tests.support.doc_quality_checks import batch_scores, differences, stream_until_agrees
from tests.support.neural import needs_neural
from tests.support.processes import run_verdictflow
from verdictflow.embedders import make_embedder
from verdictflow.evaluators.doc_quality import QualityConfig, graph_degree
from verdictflow.samples.doc_corpus import DocTraffic, generate
from verdictflow.scoring_jobs.batch.score_quality import degrees_of
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker


def test_stream_quality_equals_batch_when_everything_arrives_twice(
    settings_factory, worker_factory, tmp_path
):
    """Delivered twice (at least once), the stream still equals the batch: this also covers a
    single delivery, which had its own run (a worker start, 130 s on a slow 2-core VM)."""
    traffic = generate(240, seed=7)
    batch = batch_scores(traffic, tmp_path)
    dups = [b["features"]["dup_penalty"] for b in batch.values()]
    assert sum(d > 0 for d in dups) >= 20  # duplicates planted
    assert {1 / 3, 1.0} <= set(dups)
    settings = settings_factory()
    worker = worker_factory(settings)
    for _ in range(2):
        asyncio.run(replay(traffic.doc_lines, "docs", settings))
        asyncio.run(replay(traffic.edge_lines, "doc-edges", settings))
    stream = stream_until_agrees(settings, batch, worker)
    problems = differences(stream, batch)
    assert not problems, "\n".join(problems[:10]) + "\n" + worker.log()[-2000:]
    degrees = degrees_of(traffic.final_edges)
    for doc_id, row in stream.items():
        assert row["features"]["graph"] == graph_degree(degrees.get(doc_id, 0))
    assert len(stream) == len(traffic.final_docs)


@needs_neural
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_stream_quality_equals_batch_with_minilm(
    settings_factory, worker_factory, tmp_path, monkeypatch
):
    """Documents without a vector are embedded by MiniLM in the worker and in the batch
    inputs; the scores agree to 1e-9 and every row's digest names the embedder."""
    monkeypatch.setenv("VERDICTFLOW_QUALITY_EMBEDDER", "sentence-transformers")  # both sides
    traffic = generate(60, seed=11)
    embedder = make_embedder("sentence-transformers", 384)
    batch = batch_scores(traffic, tmp_path, embedder)
    settings = settings_factory()
    worker = worker_factory(settings)
    asyncio.run(replay(traffic.doc_lines, "docs", settings))
    asyncio.run(replay(traffic.edge_lines, "doc-edges", settings))
    stream = stream_until_agrees(settings, batch, worker)
    problems = differences(stream, batch)
    assert not problems, "\n".join(problems[:10]) + "\n" + worker.log()[-2000:]
    expected = QualityConfig(embedder=embedder.version).digest()
    assert expected != QualityConfig().digest()
    assert {row["config_digest"] for row in stream.values()} == {expected}


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
