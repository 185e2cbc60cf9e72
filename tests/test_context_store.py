"""The context-index store: indexes built once are read back by a restarted analyzer (no
indexing, equal answers), per version; bounded; damaged rows rebuilt; a broken store is a
warning, never a failed batch."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import zlib
from pathlib import Path

import pytest

from verdictflow.context_store import FILE_NAME, ContextStore, namespace, open_store
from verdictflow.evaluators.answer_analysis import COMPONENTS, AnswerAnalyzer
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.nlp import installed_pipeline_version, load_pipeline
from verdictflow.scoring_setup import load_scoring

CONTEXTS = [
    "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911. She was "
    "born in Warsaw on 7 November 1867.",
    "Revenue rose 3-5% to $3.2 billion in 2019; the company did not increase prices.",
    "The tower is 330 metres tall and was finished in March 1889 for the World's Fair.",
]
EVENTS = [
    AnswerEvent(id="a", answer="Curie won the physics prize in 1905.", contexts=CONTEXTS[:2]),
    AnswerEvent(id="b", answer="The tower is 500 metres tall.", contexts=[CONTEXTS[2]]),
]


@pytest.fixture(scope="module")
def nlp():
    return load_pipeline(COMPONENTS)


@pytest.fixture(scope="module")
def ctx():
    return load_scoring(Policy()).ctx


def verdicts(analyzer: AnswerAnalyzer, ctx, events=EVENTS) -> list[str]:
    """The NLP tier's verdicts (hallucination, faithfulness) as the wire has them."""
    out = score_answers(events, ctx, analyzer, Tier.NLP)
    return [v.model_dump_json() for answer in out for v in answer]


def store_at(path: Path, max_bytes: int = 1 << 30, version: str = "lexical") -> ContextStore:
    store = open_store(path, version, installed_pipeline_version(COMPONENTS), max_bytes)
    assert store is not None
    assert store.available
    return store


def test_a_restarted_analyzer_reads_indexes_back_and_builds_none(nlp, ctx, tmp_path) -> None:
    plain = verdicts(AnswerAnalyzer(nlp), ctx)
    assert len(plain) == 4
    assert '"FAIL"' in "".join(plain)
    first = AnswerAnalyzer(nlp, store=store_at(tmp_path))
    assert verdicts(first, ctx) == plain
    assert first.store is not None
    assert first.store.misses == 3
    assert first.store.hits == 0

    restarted = AnswerAnalyzer(nlp, store=store_at(tmp_path))  # fresh memory cache
    assert [p.contexts for p in restarted.analyze(EVENTS)] == [
        p.contexts for p in AnswerAnalyzer(nlp).analyze(EVENTS)
    ]
    assert verdicts(restarted, ctx) == plain
    assert restarted.store is not None
    assert restarted.store.hits == 3
    assert restarted.contexts_indexed == 0, "every context came from the store: none was indexed"
    assert restarted.cache.misses == 3
    assert (tmp_path / FILE_NAME).stat().st_mode & 0o777 == 0o600, "owner-only"
    assert len(restarted.cache) == 3


def test_another_version_reads_none_of_the_rows(nlp, tmp_path) -> None:
    AnswerAnalyzer(nlp, store=store_at(tmp_path)).analyze(EVENTS)
    other = store_at(tmp_path, version="parse")
    assert other.namespace != namespace("lexical", installed_pipeline_version(COMPONENTS))
    AnswerAnalyzer(nlp, context_index="parse", store=other).analyze(EVENTS)
    assert other.hits == 0
    assert other.misses == 3
    rows = sqlite3.connect(tmp_path / FILE_NAME).execute(
        "SELECT namespace, COUNT(*) FROM evidence_indexes GROUP BY namespace"
    )
    assert sorted(n for _, n in rows) == [3, 3]


def test_the_store_is_bounded_oldest_out(tmp_path) -> None:
    store = store_at(tmp_path, max_bytes=20_000)

    def noise(i: int) -> bytes:  # 2 KB that zlib cannot shrink
        return b"".join(hashlib.sha256(bytes([i, j])).digest() for j in range(64))

    bodies = [(bytes([i]) * 32, noise(i)) for i in range(40)]
    for entry in bodies[:5]:
        store.write([entry])
    assert store.evictions == 0
    for entry in bodies[5:]:
        store.write([entry])
    assert store.stored_bytes <= 20_000
    assert store.evictions > 0  # what index-contexts reports: its corpus did not all fit
    kept = store.read([key for key, _ in bodies])
    assert kept
    assert len(kept) < len(bodies)
    assert bodies[-1][0] in kept, "the newest stay"
    assert bodies[0][0] not in kept, "the oldest go first"
    assert all(kept[key] == body for key, body in bodies if key in kept)


def test_a_damaged_row_is_built_again_and_written_over(nlp, ctx, tmp_path, caplog) -> None:
    plain = verdicts(AnswerAnalyzer(nlp), ctx, EVENTS[1:])
    AnswerAnalyzer(nlp, store=store_at(tmp_path)).analyze(EVENTS[1:])
    with sqlite3.connect(tmp_path / FILE_NAME) as db:
        db.execute("UPDATE evidence_indexes SET body = ?", (zlib.compress(b'{"f": 1}'),))
    damaged = AnswerAnalyzer(nlp, store=store_at(tmp_path))
    with caplog.at_level(logging.WARNING):
        assert verdicts(damaged, ctx, EVENTS[1:]) == plain
    assert damaged.store_rejects == 1
    assert "built again" in caplog.text
    again = AnswerAnalyzer(nlp, store=store_at(tmp_path))
    assert verdicts(again, ctx, EVENTS[1:]) == plain
    assert again.store_rejects == 0
    assert again.store is not None
    assert again.store.hits == 1


def test_a_store_that_cannot_open_or_fails_is_a_warning(nlp, ctx, tmp_path, caplog) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        store = ContextStore(blocked / FILE_NAME, "ns", 1 << 20)
    assert not store.available
    assert "in memory only" in caplog.text
    assert store.read([b"k"]) == {}
    assert store.write([(b"k", b"v")]) is None

    working = store_at(tmp_path / "data")
    analyzer = AnswerAnalyzer(nlp, store=working)
    working._connection.execute("DROP TABLE evidence_indexes")  # type: ignore[union-attr]
    with caplog.at_level(logging.WARNING):
        assert verdicts(analyzer, ctx) == verdicts(AnswerAnalyzer(nlp), ctx)
    assert working.errors >= 1
    assert "going on without it" in caplog.text


def test_zero_bytes_turns_the_store_off(tmp_path) -> None:
    assert open_store(tmp_path, "lexical", "x", 0) is None
    assert not (tmp_path / FILE_NAME).exists()


def test_the_worker_exports_the_store_figures(nlp, tmp_path) -> None:
    from prometheus_client import generate_latest

    from verdictflow.streams.worker_metrics import WorkerMetrics

    AnswerAnalyzer(nlp, store=store_at(tmp_path)).analyze(EVENTS)
    analyzer = AnswerAnalyzer(nlp, store=store_at(tmp_path))
    metrics = WorkerMetrics()
    metrics.watch_context_cache(analyzer.cache, analyzer.store)
    analyzer.analyze(EVENTS)
    text = generate_latest(metrics.registry).decode()
    assert "vf_context_store_hits_total 3.0" in text
    assert "vf_context_store_misses_total 0.0" in text
    assert "vf_context_store_errors_total 0.0" in text
    with sqlite3.connect(tmp_path / FILE_NAME) as db:
        (stored,) = db.execute("SELECT SUM(length(body)) FROM evidence_indexes").fetchone()
        (sizes,) = db.execute("SELECT SUM(size) FROM evidence_indexes").fetchone()
    assert sizes == stored
    assert f"vf_context_store_bytes {float(stored)}" in text


def test_two_writers_on_one_file_lose_nothing(tmp_path) -> None:
    """Two connections (as two workers on one volume) writing at once: SQLite's lock makes
    one wait for the other; every entry is kept and no write fails."""
    import threading

    stores = [store_at(tmp_path), store_at(tmp_path)]

    def write(store: ContextStore, tag: int) -> None:
        for i in range(60):
            store.write([(bytes([tag, i]) * 16, bytes([tag, i]) * 500)])

    threads = [threading.Thread(target=write, args=(s, n)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [s.errors for s in stores] == [0, 0]
    keys = [bytes([tag, i]) * 16 for tag in (0, 1) for i in range(60)]
    assert len(store_at(tmp_path).read(keys)) == 120
