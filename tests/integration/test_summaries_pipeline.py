"""Summaries through the real broker and a real worker: every valid event gets its judge
verdicts, equal byte for byte to ``eval summaries`` offline; malformed ones a dead letter."""

from __future__ import annotations

import asyncio
import json

import orjson
import pytest

from tests.support.paths import SHARED_DATA
from tests.support.verdict_collection import collect
from verdictflow.evaluators.judge.verdicts import JudgeConfig, JudgeContext
from verdictflow.pipelines.summaries import spacy_parser
from verdictflow.scoring_jobs.eval_summaries import evaluate_summaries
from verdictflow.scoring_jobs.replay import replay

pytestmark = pytest.mark.broker
SUMMEVAL = SHARED_DATA / "summeval"


def traffic() -> list[bytes]:
    """40 SummEval pairs (both judges, one judge, or the event's default) and 3 bad records."""
    lines = []
    with open(SUMMEVAL / "summeval_pairs.jsonl", encoding="utf-8") as f:
        for i, line in zip(range(40), f, strict=False):
            row = json.loads(line)
            event = {"id": f"se-{i}", "article": row["source"], "summary": row["system_output"]}
            if i % 3 == 1:
                event["judges"] = ["judge_lock"]
            lines.append(orjson.dumps(event))
    lines += [
        b"{not json",
        b'{"id": "x", "article": "a"}',
        b'{"id": "e", "article": "", "summary": "s"}',
    ]
    return lines


def test_summaries_get_exactly_their_judge_verdicts(settings_factory, worker_factory):
    if not SUMMEVAL.is_dir():
        pytest.skip(f"SummEval data not found at {SUMMEVAL}")
    settings = settings_factory(partitions=2)
    lines = traffic()
    parse, version = spacy_parser()
    ctx = JudgeContext(JudgeConfig(), version)
    outputs = list(evaluate_summaries(lines, parse, ctx))
    expected = {orjson.loads(v)["verdict_id"]: v for dead, v in outputs if not dead}
    assert len(expected) == 40 * 2 - 13 + 2  # 13 judge_lock-only events; the empty one: 2 DEFERs
    assert sum(1 for dead, _ in outputs if dead) == 2

    worker = worker_factory(settings)
    asyncio.run(replay(lines, "summaries", settings))
    verdicts, dead = asyncio.run(
        collect(settings, len(expected), 2, 180, alive=lambda: worker.proc.poll() is None)
    )
    assert worker.proc.poll() is None, worker.log()[-3000:]
    assert verdicts.keys() == expected.keys(), worker.log()[-3000:]
    for vid, values in verdicts.items():
        assert set(values) == {expected[vid]}, f"verdict {vid} differs from offline eval"
    assert sorted(d["error_code"] for d in dead) == ["not_json", "schema"]
    assert all(d["source_topic"] == f"{settings.topic_prefix}summaries" for d in dead)
