"""Summaries through the real broker and a real worker: every valid event gets its judge
verdicts and its faithfulness verdict, equal byte for byte to ``eval summaries`` offline;
malformed ones a dead letter; with the policy's ``faithfulness.summaries`` off, no faithfulness
verdict."""

from __future__ import annotations

import asyncio
import json

import orjson
import pytest

from tests.support.paths import SHARED_DATA
from tests.support.verdict_collection import collect
from verdictflow.evaluators.policy import Policy
from verdictflow.evaluators.summary_judges.verdicts import JudgeConfig, JudgeContext
from verdictflow.pipelines.summaries import spacy_parser
from verdictflow.scoring_jobs.batch.eval_summaries import evaluate_summaries
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker
SUMMEVAL = SHARED_DATA / "summeval"
ARTICLE = (
    "The city council of Paris approved a new budget of 5 million euros on Monday after a "
    "long debate. Mayor Anne Hidalgo said the money will fund three new schools in the north "
    "of the city. Construction is expected to begin in the spring of next year."
)
#: A fabricated name ("Lyon", where the article says Paris), and a faithful summary.
PARIS = [
    {"id": "lyon", "article": ARTICLE, "summary": "The council of Lyon approved a budget of 5 "
     "million euros on Monday."},
    {"id": "paris", "article": ARTICLE, "summary": "The city council of Paris approved a new "
     "budget of 5 million euros on Monday."},
]  # fmt: skip
BAD = [b"{not json", b'{"id": "x", "article": "a"}']


def traffic() -> list[bytes]:
    """40 SummEval pairs (both judges, one judge, or the event's default), the two Paris
    summaries and 3 bad records (2 malformed, 1 valid with an empty article)."""
    lines = []
    with open(SUMMEVAL / "summeval_pairs.jsonl", encoding="utf-8") as f:
        for i, line in zip(range(40), f, strict=False):
            row = json.loads(line)
            event = {"id": f"se-{i}", "article": row["source"], "summary": row["system_output"]}
            if i % 3 == 1:
                event["judges"] = ["judge_lock"]
            lines.append(orjson.dumps(event))
    lines += [orjson.dumps(e) for e in PARIS]
    lines += [*BAD, b'{"id": "e", "article": "", "summary": "s"}']
    return lines


def test_summaries_get_exactly_their_judge_and_faithfulness_verdicts(
    settings_factory, worker_factory
):
    if not SUMMEVAL.is_dir():
        pytest.skip(f"SummEval data not found at {SUMMEVAL}")
    settings = settings_factory(partitions=2)
    lines = traffic()
    parse, version = spacy_parser()
    ctx = JudgeContext(JudgeConfig(), version)
    scoring = load_scoring(Policy(), settings.idf_stats)
    outputs = list(evaluate_summaries(lines, parse, ctx, faithfulness=scoring))
    expected = {orjson.loads(v)["verdict_id"]: v for dead, v in outputs if not dead}
    kinds = [orjson.loads(v)["kind"] for v in expected.values()]
    # 13 judge_lock-only events; the empty article: 2 judge DEFERs and a faithfulness DEFER
    assert kinds.count("judge") == 42 * 2 - 13 + 2
    assert kinds.count("faithfulness") == 43
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
    streamed = [orjson.loads(next(iter(v))) for v in verdicts.values()]
    faithfulness = {v["input_id"]: v for v in streamed if v["kind"] == "faithfulness"}
    assert faithfulness["lyon"]["decision"] == "FAIL"
    assert "Lyon" in [f["text"] for f in faithfulness["lyon"]["evidence"]["findings"]]
    assert faithfulness["paris"]["decision"] == "PASS"
    assert faithfulness["e"]["decision"] == "DEFER"


def test_the_policy_switch_turns_faithfulness_off(settings_factory, worker_factory, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("faithfulness:\n  summaries: false\n")
    settings = settings_factory(partitions=1)
    lines = [orjson.dumps(e) for e in PARIS] + BAD
    worker = worker_factory(settings, policy=policy)
    asyncio.run(replay(lines, "summaries", settings))
    verdicts, dead = asyncio.run(
        collect(settings, 4, 2, 120, alive=lambda: worker.proc.poll() is None)
    )
    assert worker.proc.poll() is None, worker.log()[-3000:]
    streamed = [orjson.loads(next(iter(v))) for v in verdicts.values()]
    assert sorted((v["input_id"], v["kind"]) for v in streamed) == [
        ("lyon", "judge"),
        ("lyon", "judge"),
        ("paris", "judge"),
        ("paris", "judge"),
    ]
    assert sorted(d["error_code"] for d in dead) == ["not_json", "schema"]
