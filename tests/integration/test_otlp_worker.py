"""A worker started with ``--otlp-endpoint`` sends one ``gen_ai.evaluation.result`` event per
verdict it delivers to the verdict topics, to a real OTLP/HTTP receiver, and flushes what it
still holds when it is stopped."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from importlib import resources
from pathlib import Path

import orjson
import pytest

from tests.support.otlp_receiver import otlp_receiver
from tests.support.processes import WorkerProcess
from tests.support.verdict_collection import collect
from verdictflow.evaluators.policy import load_policy
from verdictflow.monitoring.otlp import evaluation_event_attributes
from verdictflow.scoring_jobs.batch.eval_answers import expected_verdicts
from verdictflow.scoring_setup import load_scoring
from verdictflow.streams.replay import replay

pytestmark = pytest.mark.broker
SAMPLE = Path(str(resources.files("verdictflow") / "samples" / "answers.jsonl"))


@pytest.mark.timeout(600)
def test_worker_exports_every_delivered_verdict_and_flushes_on_stop(
    settings_factory, tmp_path, monkeypatch
):
    # The SDK's batch processor would send every second; with a 60 s delay and fewer events
    # than a batch, nothing leaves before the worker stops, so the stop path's flush is what
    # delivers them (the unit tests cover the periodic sending).
    monkeypatch.setenv("OTEL_BLRP_SCHEDULE_DELAY", "60000")
    settings = settings_factory(partitions=2)
    lines = SAMPLE.read_bytes().splitlines()
    expected = expected_verdicts(lines, load_scoring(load_policy(None)))
    assert len(expected) == 63

    with otlp_receiver() as receiver:
        worker = WorkerProcess(
            settings, tmp_path / "worker.log", args=["--otlp-endpoint", receiver.endpoint]
        )
        try:
            asyncio.run(replay(lines, "answers", settings))
            alive = lambda: worker.proc.poll() is None  # noqa: E731
            on_topics, dead = asyncio.run(collect(settings, len(expected), 2, 240, alive=alive))
            assert alive(), worker.log()[-3000:]
            assert on_topics.keys() == expected.keys(), worker.log()[-3000:]
            assert len(dead) == 2
            assert receiver.records == [], "held in the batch queue until the worker stops"
        finally:
            worker.stop()
        assert worker.proc.returncode == 0, worker.log()[-3000:]
        records = receiver.wait_for(len(expected), timeout=60)

    assert {r["event_name"] for r in records} == {"gen_ai.evaluation.result"}
    assert {r["resource"]["service.name"] for r in records} == {"verdictflow"}
    exported = Counter(r["attributes"]["verdictflow.verdict_id"] for r in records)
    delivered = Counter({vid: len(values) for vid, values in on_topics.items()})
    assert exported == delivered, "one event per verdict record on the topics, none other"
    for r in records:
        vid = r["attributes"]["verdictflow.verdict_id"]
        assert r["attributes"] == evaluation_event_attributes(orjson.loads(expected[vid]))
    log = worker.log()
    stopped = re.findall(r"OTLP export stopped: (\d+) verdict events sent, (\d+) dropped", log)
    assert len(stopped) == 2, f"one exporter per tier's app, each shut down:\n{log[-3000:]}"
    assert sum(int(sent) for sent, _ in stopped) == len(records)
    assert all(dropped == "0" for _, dropped in stopped)
