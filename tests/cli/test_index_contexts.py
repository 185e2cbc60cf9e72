"""``verdictflow index-contexts`` fills the data dir's context store ahead of the answers: the
contexts it indexed are read back, not indexed again, and the verdicts are those of a scoring
without the store."""

from __future__ import annotations

import os

import orjson

from tests.support.processes import run_verdictflow
from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy
from verdictflow.models.codec import encode
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_jobs.batch.index_contexts import passages_of
from verdictflow.scoring_setup import load_scoring

PASSAGES = [
    "Aspirin lowered the rate of stroke by 12 % in the 2019 trial of 4,000 adults.",
    "The committee met in Geneva on 3 March 2021 and did not approve the merger.",
    "Vitamin D had no effect on fractures among women over seventy.",
]


def test_passages_come_from_strings_texts_and_answer_events() -> None:
    assert passages_of("a passage") == ["a passage"]
    assert passages_of({"doc_id": "d1", "text": "a document"}) == ["a document"]
    assert passages_of({"id": "a", "answer": "x", "contexts": ["one", {"text": "two"}]}) == [
        "one",
        "two",
    ]
    for bad in (3, ["a"], {"answer": "x"}, {"contexts": ["one", 2]}, {"contexts": "one"}):
        assert passages_of(bad) is None, bad


def test_indexed_contexts_are_read_back_with_the_same_verdicts(tmp_path) -> None:
    source = tmp_path / "passages.jsonl"
    items = [PASSAGES[0], {"doc_id": "d2", "text": PASSAGES[1]}, {"contexts": PASSAGES[1:]}]
    source.write_bytes(b"\n".join(orjson.dumps(i) for i in items) + b'\n{"nope": 1}\n')
    env = {**os.environ, "VERDICTFLOW_DATA_DIR": str(tmp_path / "data")}
    done = run_verdictflow("index-contexts", source, env=env)
    assert done.returncode == 1, done.stderr  # the last item is not a passage
    assert "passages.jsonl:4: not a passage" in done.stderr
    assert "3 distinct passages: 3 indexed, 0 already stored" in done.stderr

    event = AnswerEvent(
        id="q1",
        answer="Aspirin cut strokes by 12 % in 2019; the committee approved the merger.",
        contexts=PASSAGES,
    )
    stored = load_scoring(Policy(), "none", data_dir=tmp_path / "data", store_bytes=1 << 30)
    with_store = score_answers([event], stored.ctx, stored.analyzer, Tier.NLP)
    assert stored.analyzer.contexts_indexed == 0  # every context read back from the store
    assert stored.analyzer.store is not None
    plain = load_scoring(Policy(), "none")
    without = score_answers([event], plain.ctx, plain.analyzer, Tier.NLP)
    assert plain.analyzer.contexts_indexed == 3
    assert [encode(v) for v in with_store[0]] == [encode(v) for v in without[0]]

    again = run_verdictflow("index-contexts", source, env=env)
    assert "3 distinct passages: 0 indexed, 3 already stored" in again.stderr
