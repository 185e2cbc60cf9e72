"""The command line against the embedded broker, as a person would run it."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import orjson
import pytest

from tests.support.processes import run_verdictflow, settings_env
from verdictflow.embedders import neural_installed
from verdictflow.streams.broker import EmbeddedBroker

pytestmark = pytest.mark.broker
SAMPLE = Path(str(resources.files("verdictflow") / "samples" / "answers.jsonl"))


def test_replay_then_tail_shows_the_verdicts(settings_factory, worker_factory):
    settings = settings_factory()
    env = settings_env(settings)
    worker_factory(settings)
    replayed = run_verdictflow("replay", str(SAMPLE), "--topic", "answers", env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert "sent 13 records" in replayed.stderr

    grounded = run_verdictflow(
        "tail",
        "verdicts.groundedness",
        "--from-beginning",
        "--count",
        "11",
        "--timeout",
        "60",
        env=env,
    )
    assert grounded.returncode == 0, grounded.stderr
    by_id = {v["input_id"]: v for v in map(orjson.loads, grounded.stdout.splitlines())}
    assert len(by_id) == 11
    assert by_id["spec-q1-both-contexts"]["score"] == 1.0
    assert by_id["spec-q1-c1-only"]["score"] == 0.6
    assert by_id["no-context"]["decision"] == "DEFER"

    consistency = run_verdictflow(
        "tail",
        f"{settings.topic_prefix}verdicts.consistency",
        "--from-beginning",
        "--count",
        "8",
        "--timeout",
        "60",
        env=env,
    )
    q2 = {v["input_id"]: v for v in map(orjson.loads, consistency.stdout.splitlines())}
    assert round(q2["spec-q2"]["score"], 4) == 0.6556
    assert q2["req-capital"]["evidence"]["n"] == 3  # collected across three events

    dead = run_verdictflow(
        "tail", "dead-letters", "--from-beginning", "--count", "2", "--timeout", "30", env=env
    )
    assert sorted(orjson.loads(x)["error_code"] for x in dead.stdout.splitlines()) == [
        "not_json",
        "schema",
    ]


def test_tail_stops_after_idle_timeout(settings_factory):
    settings = settings_factory()
    result = run_verdictflow("tail", "verdicts.judge", "--timeout", "1", env=settings_env(settings))
    assert result.returncode == 0
    assert result.stdout == ""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_dev_runs_the_whole_pipeline_and_checks_it(tmp_path):
    # dev's own wait (--timeout, 120 s by default) starts before its worker has loaded spaCy
    # and the checker: on a slower 2-core VM (2026-11-28, Intel, CI) that alone took over
    # 120 s, so the test gives the pipeline 420 s and the process 480 s
    port = EmbeddedBroker().port  # a free port for dev's own broker
    result = run_verdictflow(
        "dev", "--exit-after-replay", "--timeout", "420", "--port", str(port),
        cwd=tmp_path, timeout=480,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    # 63 cheap verdicts and the shipped checker's review of the one faithfulness verdict in the
    # dev policy's band, each equal to its offline twin
    assert "64 verdicts, 2 dead letters, 0 missing, 0 differing from offline eval" in result.stdout
    assert re.search(r"faithfulness_llm spec-q1-c1-only +1\.0000 PASS", result.stdout)
    assert "judge tier" in result.stdout
    expected = "sentence-transformers, all-MiniLM" if neural_installed() else "hashing"
    assert f"embedder {expected}" in " ".join(result.stdout.split())
    assert re.search(r"console http://127\.0\.0\.1:\d+/ ", " ".join(result.stdout.split()))


def test_replay_refuses_a_line_over_the_limit_and_sends_the_rest(settings_factory, tmp_path):
    settings = settings_factory()
    env = settings_env(settings)
    events = [orjson.dumps({"id": f"a{i}", "answer": "x"}) for i in range(4)]
    huge = orjson.dumps({"id": "huge", "answer": "x" * 1_500_000})
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join([*events[:2], huge, *events[2:]]) + b"\n")
    result = run_verdictflow("replay", str(path), "--topic", "answers", env=env)
    assert result.returncode == 1, result.stderr
    assert "refused line 3 (1,500," in result.stderr
    assert "sent 4 records" in result.stderr
    sent = run_verdictflow(
        "tail", "answers", "--from-beginning", "--count", "4", "--timeout", "30", env=env
    )
    assert sorted(orjson.loads(x)["id"] for x in sent.stdout.splitlines()) == [
        "a0",
        "a1",
        "a2",
        "a3",
    ]
